// Fuzz target: the small languages of flag values. The first byte picks the
// parser, the rest is the value: a LIST (--stages 1..4,8), a name list
// (--schedule gpipe,1f1b), a byte size (--memory-limit 80GB), a partition
// (--partition balanced, 4,4,8), a fault (--inject-fault 1:F3:fail), an action
// (0F3, 1RECV_F2) and an overlapped pair.
#include <string>

#include "exec/runtime/fault.hpp"
#include "models/partition.hpp"
#include "schedules/action.hpp"
#include "schedules/overlap.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/name_list.hpp"
#include "tools/common/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view value = gpipe::fuzz::text_of(data + 1, size - 1);
  gpipe::fuzz::refusing_only_with_input_error([&] {
    switch (data[0] % 7) {
      case 0: (void)gpipe::tools::parse_int_list(value, "--stages"); break;
      case 1: (void)gpipe::tools::parse_name_list(std::string(value), "--schedule", {"gpipe", "1f1b", "zbv"}); break;
      case 2: (void)gpipe::tools::parse_bytes(value, "--memory-limit"); break;
      case 3: (void)gpipe::models::parse_partition_spec(value); break;
      case 4: (void)gpipe::exec::parse_fault_injection(value); break;
      case 5: (void)gpipe::schedules::parse_action(value); break;
      default: (void)gpipe::schedules::parse_overlap_pair(value); break;
    }
  });
  return 0;
}
