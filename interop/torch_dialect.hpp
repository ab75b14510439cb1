// A lowered schedule as torch's runtime reads it back
// (_PipelineScheduleRuntime._load_csv(..., format="compute_comms"), PyTorch
// 2.15), which wants every send retired by a wait and knows no STEP or R:
//   - WAIT_SEND_F(s,m) right after the backward of (s,m) on the rank (its
//     gradient came back, so the activation was received), where torch's
//     lowering (_add_wait_send) puts it; every other send's wait at the end of
//     the rank's list, in the order of the sends;
//   - no STEP: torch steps the optimizer outside the schedule (the simulator
//     adds STEP back at the end when it reads such a file).
#pragma once

#include "schedules/schedule.hpp"

namespace gpipe::interop {

// Throws InputError for a schedule with R actions: torch's CSV has no
// recompute action (activation checkpointing lives inside torch's stage).
// A schedule that is not lowered comes back unchanged.
[[nodiscard]] schedules::Schedule torch_comms_dialect(const schedules::Schedule& lowered);

}  // namespace gpipe::interop
