// Fuzz target: a Chrome trace as `gpipe-sim diff` reads it (docs/design.md "Trace
// format"), then its metrics and the lint, and a diff of the trace against itself.
#include "base/files.hpp"
#include "sim/diff.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"
#include "timelines/trace_lint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    (void)gpipe::timelines::lint_chrome_trace(json);
    const auto timeline = gpipe::timelines::timeline_from_chrome_trace(json, "fuzz.json");
    (void)gpipe::sim::diff_timelines(timeline, timeline, /*worst=*/3);
  });
  return 0;
}
