// Lowering: from the compute actions a generator produced to the full program
// each rank runs. It inserts
//   - R(s,m) before the backward of (s,m), per the recompute policy;
//   - RECV_F / RECV_B just before the compute action that consumes the data,
//     and SEND_F / SEND_B just after the one that produces it, where the two
//     stages sit on different ranks;
//   - for a stage that reduces its gradients (a tied embedding's ends, every
//     stage with data parallelism: gradient_reduction.hpp), REDUCE_GRAD right
//     after its last backward and WAIT_REDUCE_GRAD at the end of its rank's
//     list, and STEP of each stage after those.
// An overlapped pair (Schedule::overlapped) stays side by side: the R and
// receives of both go before the pair, the sends of both after it.
// R goes before RECV_B so that a rank blocked on a receive (the executor) and a
// rank whose transfers run beside its compute (the simulator) start R at the
// same moment.
#pragma once

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// Returns the lowered schedule; a schedule already lowered comes back unchanged.
[[nodiscard]] Schedule lower(const Schedule& schedule);

// Whether lowering recomputes (s,m), whose backward sits at `position` of its
// rank's compute-only list: always under stage, never under never and full,
// and under stage_except_last unless the action just before it on the rank is
// the forward of the same (s,m).
[[nodiscard]] bool recomputes(const Schedule& compute_only, Rank rank, int position);

}  // namespace gpipe::schedules
