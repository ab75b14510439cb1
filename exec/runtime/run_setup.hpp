// What a trainer checks and derives before any thread starts, shared by the
// CPU trainer (exec/runtime/trainer.cpp) and the CUDA one (exec/cuda/runtime/): the
// options are checked with errors naming the flag, the schedule validated and
// lowered, and the RunPlan every worker reads is laid out.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "exec/runtime/trainer.hpp"
#include "exec/runtime/worker.hpp"
#include "schedules/schedule.hpp"
#include "schedules/timeline.hpp"

namespace gpipe::exec {

// Throws InputError for options no run can have: steps, measured steps, the
// watchdog, a partition that does not match the schedule or the model, and a
// split backward (I/W), which `backend` ("cpu", "cuda") names in the message.
void check_train_options(const TrainOptions& options, std::string_view backend);

// The schedule validated and lowered, and the fault (if any) checked against it.
[[nodiscard]] schedules::Schedule lower_checked(const TrainOptions& options);

// The plan of a run of `options` on `lowered`; it points into both, which must outlive it.
[[nodiscard]] RunPlan make_plan(const TrainOptions& options, const schedules::Schedule& lowered);

// The index of the timeline of median step time (the lower median).
[[nodiscard]] std::size_t median_step(const std::vector<schedules::Timeline>& steps);

}  // namespace gpipe::exec
