// Which action a runtime call is made for: the rank, the action and its
// position in the rank's lowered program, and the measured step it belongs to
// (none for the steps that are not measured). What a timer files a
// measurement under, and what a link needs to time a transfer.
#pragma once

#include <cstddef>

#include "schedules/action.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

struct ActionMark {
  schedules::Rank rank;
  int slot = -1;           // the measured step (0: the first measured one), -1: not measured
  std::size_t index = 0;   // into the rank's lowered program
  schedules::Action action;

  [[nodiscard]] bool measured() const { return slot >= 0; }
};

}  // namespace gpipe::exec
