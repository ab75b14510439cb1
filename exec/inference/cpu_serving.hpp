// `gpipe-run infer` on the CPU: a serving run (schedules/serving_workload.hpp)
// through K stages, each rank a thread of this process with its own compute
// team, forward only (docs/design.md, "Inference"; what each rank does:
// serving_rank.hpp). The ranks hand activations over the in-process link (a
// pointer moves: an item's input arrives as its sender hands it over), and
// share one Admission. Measured on the host clock from the run's start.
// exec/mpi/mpi_serving.hpp runs the same ranks as processes.
#pragma once

#include "exec/inference/serving_request.hpp"

namespace gpipe::exec::inference {

// Throws InputError for a request that cannot be (a partition that does not
// sum to the model's layers, a workload validate_workload refuses), and
// RunError naming the rank and the item for a failure while running.
[[nodiscard]] ServingResult run_cpu_serving(const ServingRequest& request);

}  // namespace gpipe::exec::inference
