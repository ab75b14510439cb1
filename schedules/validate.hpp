// Schedule validation: finds every way a schedule can be wrong (a bad header, an
// impossible action, a missing or duplicated one, a backward before its forward,
// an unmatched send/recv, a dependency cycle) and names the rank, step and
// action of each, with the cells to mark in the grid (grid.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

struct ScheduleError {
  enum class Kind {
    bad_header,               // counts, stage_to_rank or the rank lists do not fit together
    bad_action,               // an action that cannot exist in this schedule or on this rank
    missing,                  // an action the schedule needs is absent
    duplicate,                // the same work listed twice (incl. B mixed with I/W)
    backward_before_forward,  // B/I/R/W before its F on the rank, W before I, B/I before R
    unmatched_comm,           // a send without its receive or a receive without its send
    cycle,                    // a dependency cycle: the schedule deadlocks
  };
  Kind kind;
  std::string message;          // one line: "rank 1 step 3: 1F1 ..."; steps are 0-based
  std::vector<Position> where;  // the cells to mark in the grid
};

[[nodiscard]] std::string_view to_string(ScheduleError::Kind kind);

// Every error found, in a fixed order: header; bad_action and duplicate rank by
// rank, step by step; missing and order checks stage by stage, micro-batch by
// micro-batch; comm pairs boundary by boundary; the cycle last, only when no
// other error was found (a cycle is only meaningful on a sound schedule). A bad
// header stops the search, as the rest cannot be read without it.
// Keeps the first kMaxKeptErrors; `total`, when given, receives how many
// there were in all (one bad cell can leave millions of actions missing).
inline constexpr std::size_t kMaxKeptErrors = 100;
[[nodiscard]] std::vector<ScheduleError> find_errors(const Schedule& schedule, std::size_t* total = nullptr);

// Throws gpipe::InputError with the first error's message; returns if none.
void validate(const Schedule& schedule);

}  // namespace gpipe::schedules
