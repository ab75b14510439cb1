// Fuzz target: a PyTorch profiler trace as `gpipe-sim profile
// --from-torch-trace` reads it (schedules/kineto_trace.hpp), then the profile
// of its layers (profiles/torch_trace_profile.hpp), by modules and by labels;
// and as one rank of torch's pipeline run (`gpipe-sim diff --torch-traces`,
// schedules/torch_pipeline_timeline.hpp), its bubble attributed.
#include <nlohmann/json.hpp>

#include "profiles/profile.hpp"
#include "profiles/torch_trace_profile.hpp"
#include "schedules/files.hpp"
#include "schedules/kineto_trace.hpp"
#include "schedules/torch_pipeline_timeline.hpp"
#include "sim/wait_attribution.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const gpipe::profiles::TorchTrace trace{gpipe::schedules::kineto_trace_from_json(json, "fuzz.json"), 1};
    const auto profile = gpipe::profiles::torch_trace_profile({trace}, {.no_activation_bytes = true});
    (void)gpipe::profiles::profile_from_json(gpipe::profiles::to_json(profile), "fuzz profile");
  });
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const gpipe::profiles::TorchTrace trace{gpipe::schedules::kineto_trace_from_json(json, "fuzz.json"), 2};
    (void)gpipe::profiles::torch_trace_profile({trace}, {.layers = "Lin_.*|layer[0-9]+"});
  });
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const auto run = gpipe::schedules::torch_pipeline_run({gpipe::schedules::kineto_trace_from_json(json, "fuzz.json")});
    (void)gpipe::sim::attribute_waits(run.timeline);
  });
  return 0;
}
