// A training of this process's rank in an MPI world that is already running,
// so that one process can measure before and after it (the link profiler's
// pipeline transfers, exec/mpi/link_probe.hpp). Built only with MPI.
#pragma once

#include <string>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/mpi/mpi_world.hpp"

namespace gpipe::exec::mpi {

// As train_as_mpi_process (mpi_run.hpp), in `world`; after a failure `world`
// is left unfinalized (peers may be gone) and the error is rethrown.
[[nodiscard]] Trained<cpu::CpuBackend> train_in_world(MpiWorld& world, const TrainOptions& options,
                                                      const std::string& launcher);

}  // namespace gpipe::exec::mpi
