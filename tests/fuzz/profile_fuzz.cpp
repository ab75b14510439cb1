// Fuzz target: a profile file (docs/design.md "Profile format"), read and then
// simulated, K=2 (or 1) and M=4 with 1f1b, as `gpipe-sim run --profile` does:
// numbers the reader lets through must give a report that keeps its promises
// (timelines/report_check.hpp), never a wrong number or an overflow.
#include <algorithm>

#include "base/files.hpp"
#include "profiles/profile.hpp"
#include "sim/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "timelines/report_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const gpipe::profiles::Profile profile = gpipe::profiles::profile_from_json(json, "fuzz.json");
    gpipe::sim::Scenario scenario;
    scenario.request.schedule = "1f1b";
    scenario.request.stages = std::min<int>(2, static_cast<int>(profile.layers.size()));
    scenario.request.microbatches = 4;
    scenario.request.micro_batch_size = profile.layers.front().samples.front().micro_batch_size;
    const auto prediction = gpipe::sim::predict(profile, scenario, /*record_timeline=*/false);
    gpipe::timelines::check_report(prediction.metrics, "the prediction");
  });
  return 0;
}
