// The step loop of a rank's worker thread, for the CPU and CUDA workers alike:
// every step in turn, and the one line a failure becomes. An Aborted ends the
// loop quietly (another rank or the watchdog has the run's error); any other
// exception is recorded as the run's error, "rank R failed in ACTION: what"
// while an action ran, "rank R failed at step S: what" between actions.
#pragma once

#include <functional>
#include <vector>

#include "exec/runtime/run_control.hpp"
#include "schedules/action.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

// Runs run_step(0 .. steps-1); `current` is read on failure: the index into
// `program` of the running action, -1 between actions. Returns whether every
// step completed. Never throws.
[[nodiscard]] bool run_worker_steps(RunControl& control, schedules::Rank rank,
                                    const std::vector<schedules::Action>& program, const int& current,
                                    int steps, const std::function<void(int step)>& run_step) noexcept;

}  // namespace gpipe::exec
