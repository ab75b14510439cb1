// Fuzz target: a schedule file in the IR's JSON form (docs/design.md "Schedule IR"),
// read and checked as `gpipe-sim check` does.
#include <nlohmann/json.hpp>

#include "base/files.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/validate.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto json = gpipe::parse_json_text(gpipe::fuzz::text_of(data, size), "fuzz.json");
    const auto schedule = gpipe::schedules::schedule_from_json(json, "fuzz.json");
    (void)gpipe::schedules::find_errors(schedule);
  });
  return 0;
}
