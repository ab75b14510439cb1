// Running one thread per rank under supervision, for every backend
// (exec/runtime/trainer.hpp): the calling thread hands each finished step's
// loss to TrainOptions::on_step and stops the run when no action has finished for the
// watchdog's time. However it leaves, every started thread has been joined.
#pragma once

#include <functional>
#include <vector>

#include "exec/runtime/run_control.hpp"
#include "exec/runtime/train_options.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::exec {

// Starts `bodies` (one per rank; each must not throw and must end with
// RunControl::exit_worker), supervises them, and joins them. Rethrows an
// exception of on_step; throws RunError with the run's first error.
void run_supervised(const TrainOptions& options, RunControl& control,
                    const schedules::Schedule& lowered, std::vector<std::function<void()>> bodies);

}  // namespace gpipe::exec
