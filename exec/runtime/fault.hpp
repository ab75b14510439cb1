// Fault injection for testing the executor's fault handling: `--inject-fault
// RANK:ACTION` makes rank RANK fail (throw) when it runs ACTION, e.g. `2:2F3`;
// `RANK:ACTION:stall` makes it stop there without failing, which only the
// watchdog can end; `RANK:ACTION:oom` makes it run out of memory there (it
// throws std::bad_alloc, as an allocation would).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "schedules/action.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

struct FaultInjection {
  enum class Kind { fail, stall, out_of_memory };
  schedules::Rank rank;
  schedules::Action action;
  Kind kind = Kind::fail;
  bool operator==(const FaultInjection&) const = default;
};

// Parses the flag's value; throws InputError naming --inject-fault and the text.
[[nodiscard]] FaultInjection parse_fault_injection(std::string_view text);
[[nodiscard]] std::string to_string(const FaultInjection& fault);

}  // namespace gpipe::exec
