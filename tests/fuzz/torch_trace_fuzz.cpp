// Fuzz target: a PyTorch profiler trace as `gpipe-sim profile
// --from-torch-trace` reads it (interop/kineto_trace.hpp), then the profile
// of its layers (interop/torch_trace_profile.hpp), by modules and by labels;
// its steps (interop/torch_steps.hpp), which must be spans in time order;
// and as one rank of torch's pipeline run (`gpipe-sim diff --torch-traces`,
// interop/torch_pipeline_timeline.hpp), its bubble attributed.
#include <cstdlib>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "base/files.hpp"
#include "interop/kineto_trace.hpp"
#include "interop/torch_pipeline_timeline.hpp"
#include "interop/torch_steps.hpp"
#include "interop/torch_trace_profile.hpp"
#include "profiles/profile.hpp"
#include "sim/wait_attribution.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const gpipe::interop::TorchTrace trace{gpipe::interop::kineto_trace_from_json(json, "fuzz.json"), 1};
    const auto profile = gpipe::interop::torch_trace_profile({trace}, {.no_activation_bytes = true});
    (void)gpipe::profiles::profile_from_json(gpipe::profiles::to_json(profile), "fuzz profile");
  });
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const gpipe::interop::TorchTrace trace{gpipe::interop::kineto_trace_from_json(json, "fuzz.json"), 2};
    (void)gpipe::interop::torch_trace_profile({trace}, {.layers = "Lin_.*|layer[0-9]+"});
  });
  // The steps a trace splits into (interop/torch_steps.hpp): in time order,
  // disjoint, each a span; one at least wherever there is an event.
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const auto trace = gpipe::interop::kineto_trace_from_json(json, "fuzz.json");
    for (const auto& layers : {std::optional<std::regex>(), std::optional<std::regex>("Lin_.*|layer[0-9]+")}) {
      const auto split = gpipe::interop::split_trace_steps(trace, layers);
      if (split.steps.empty() != trace.events.empty() || (!split.steps.empty() && split.by.empty())) std::abort();
      for (std::size_t k = 0; k < split.steps.size(); ++k) {
        if (split.steps[k].end_ns < split.steps[k].start_ns) std::abort();
        if (k > 0 && split.steps[k].start_ns <= split.steps[k - 1].end_ns &&
            split.by != "ProfilerStep#N spans") {  // torch's own spans are as the trace says
          std::abort();
        }
      }
    }
  });
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const auto run = gpipe::interop::torch_pipeline_run({gpipe::interop::kineto_trace_from_json(json, "fuzz.json")});
    (void)gpipe::sim::attribute_waits(run.timeline);
  });
  return 0;
}
