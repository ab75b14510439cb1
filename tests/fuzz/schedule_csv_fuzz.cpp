// Fuzz target: a schedule in torch's CSV form (one row per rank, cells such as
// 0F3 and RECV_F), read and checked as `gpipe-sim check` does.
#include "interop/torch_csv.hpp"
#include "schedules/validate.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpipe::fuzz::refusing_only_with_input_error([&] {
    const auto schedule = gpipe::interop::schedule_from_csv(gpipe::fuzz::text_of(data, size), "fuzz.csv", "fuzz");
    (void)gpipe::schedules::find_errors(schedule);
  });
  return 0;
}
