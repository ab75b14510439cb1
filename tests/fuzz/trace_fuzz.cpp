// Fuzz target: a Chrome trace as `gpipe-sim diff` reads it (DESIGN.md "Trace
// format"), then its metrics and the lint, and a diff of the trace against itself.
#include "schedules/chrome_trace.hpp"
#include "schedules/files.hpp"
#include "schedules/metrics.hpp"
#include "schedules/trace_lint.hpp"
#include "sim/diff.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    (void)gpipe::schedules::lint_chrome_trace(json);
    const auto timeline = gpipe::schedules::timeline_from_chrome_trace(json, "fuzz.json");
    (void)gpipe::sim::diff_timelines(timeline, timeline, /*worst=*/3);
  });
  return 0;
}
