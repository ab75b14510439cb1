// The rank x step grid printer: a time-aligned picture of a schedule's fill and
// drain, one row per unit time step and one column per rank, after
// torch.distributed.pipelining's schedule printer. gpipe, K=2, M=2:
//
//   step  rank 0  rank 1
//      0  0F0     .
//      1  0F1     1F0
//      2  .       1F1
//      3  .       1B1
//      4  0B1     1B0
//      5  0B0
//
// Every piece of work (F, B, I, W, R, STEP) takes one step; the other actions
// (comm, send waits, housekeeping) take none and are not drawn, but
// dependencies pass through them, and a receive is posted without holding up
// its rank (dependencies.hpp, blocks_rank). `.` is a rank
// waiting on data; an empty cell is a rank that has finished. A schedule that
// cannot go on (a deadlock, a missing dependency) ends with a `stuck` row that
// shows, marked, the action each unfinished rank is blocked on (a posted
// receive, when that is what its next action waits for).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// Unit-time list scheduling: at each step, each rank runs its next action in
// program order if everything it needs (Dependencies::of) finished at an
// earlier step. Cells at a Position in `marks` (rank, index in that rank's full
// action list) print as `[0F1]`. Rows end without trailing spaces, each with '\n'.
[[nodiscard]] std::string format_grid(const Schedule& schedule, const std::vector<Position>& marks = {});

// The most cells a grid is drawn with. Its steps are at most the schedule's
// actions, its columns its ranks; past this many cells (K = 20000 would need
// billions) the picture is no use to anyone and only costs memory.
inline constexpr std::int64_t kMaxGridCells = 10'000'000;
// Whether `schedule` may need more than kMaxGridCells cells.
[[nodiscard]] bool grid_too_large(const Schedule& schedule);

}  // namespace gpipe::schedules
