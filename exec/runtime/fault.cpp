#include "exec/runtime/fault.hpp"

#include <charconv>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec {

namespace {

[[noreturn]] void bad(std::string_view text, std::string_view why) {
  throw InputError(fmt::format("--inject-fault {}: {} (expected RANK:ACTION[:stall|:oom], e.g. 2:2F3)",
                               text, why));
}

}  // namespace

FaultInjection parse_fault_injection(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) bad(text, "no ':' after the rank");
  const std::string_view rank_text = text.substr(0, colon);
  std::string_view rest = text.substr(colon + 1);

  int rank = -1;
  const auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
  if (ec != std::errc{} || end != rank_text.data() + rank_text.size() || rank < 0) {
    bad(text, fmt::format("rank '{}' is not a non-negative integer", rank_text));
  }

  FaultInjection fault;
  fault.rank = schedules::Rank{rank};
  if (const std::size_t kind = rest.find(':'); kind != std::string_view::npos) {
    const std::string_view name = rest.substr(kind + 1);
    if (name == "stall") {
      fault.kind = FaultInjection::Kind::stall;
    } else if (name == "oom") {
      fault.kind = FaultInjection::Kind::out_of_memory;
    } else {
      bad(text, fmt::format("unknown fault kind '{}'", name));
    }
    rest = rest.substr(0, kind);
  }
  try {
    fault.action = schedules::parse_action(rest);
  } catch (const InputError& e) {
    bad(text, e.what());
  }
  return fault;
}

std::string to_string(const FaultInjection& fault) {
  const char* kind = fault.kind == FaultInjection::Kind::stall           ? ":stall"
                     : fault.kind == FaultInjection::Kind::out_of_memory ? ":oom"
                                                                         : "";
  return fmt::format("{}:{}{}", fault.rank.value, schedules::to_string(fault.action), kind);
}

}  // namespace gpipe::exec
