// Training one rank per process, this process's rank from the launcher
// (torchrun, mpirun, srun: exec/dist/bootstrap.hpp), the processes meeting at
// the rendezvous store that rank 0 serves at MASTER_ADDR:MASTER_PORT: the
// store's process group around the runtime's train_in_group. Here rather than
// in the runtime, so that the runtime knows a ProcessGroup and not the store.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/dist/bootstrap.hpp"
#include "exec/dist/store_process_group.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/trainer.hpp"

namespace gpipe::exec {

// How long a process waits at the store (a step's barrier, the other ranks'
// parts): the watchdog's time, and at least 30 s for a slow start. A store's
// wait cannot be woken by an abort, so a process whose peer failed leaves it
// after this long, with an error naming the wait.
[[nodiscard]] inline std::chrono::milliseconds store_timeout(double watchdog_seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(30.0, watchdog_seconds) * 1000));
}

// One rank per process, this one's from the launcher (`launch`), meeting at
// the rendezvous store that rank 0 serves at MASTER_ADDR:MASTER_PORT. Throws
// InputError when the launch does not fit the schedule.
template <TrainingBackend B>
[[nodiscard]] Trained<B> train_as_process(const TrainOptions& o, const typename B::Options& backend_options,
                                          const LaunchInfo& launch) {
  check_train_options(o, B::kName, runs_split_backward<B>());
  (void)lower_checked(o);
  // Replicas need the backend's reducer (the CUDA backend's: NCCL's);
  // tensor parallelism and ZeRO run on --backend cpu over MPI alone.
  if ((o.schedule.data_parallel > 1 && !GradientReducingBackend<B>) || o.tensor_parallel > 1 || o.zero > 0 ||
      o.model.context_parallel > 1) {
    throw InputError(fmt::format("--data-parallel {} --tensor-parallel {} --context-parallel {} --zero {}: the {} "
                                 "backend has no such collectives between processes yet (--backend cpu runs them "
                                 "over MPI)",
                                 o.schedule.data_parallel, o.tensor_parallel, o.model.context_parallel, o.zero,
                                 B::kName));
  }
  check_launch_fits(o, launch.world_size, launch.launcher);
  B::require_available();  // before waiting for the other processes
  TcpStore store(launch.master_addr, launch.master_port, launch.rank == 0,
                 store_timeout(o.watchdog_seconds));
  StoreProcessGroup group(store, launch.rank, launch.world_size, o.schedule.num_ranks);
  return train_in_group<B>(o, backend_options, group);
}

}  // namespace gpipe::exec
