// The CPU backend with one rank per process, under mpirun or srun: MPI is
// started for the run (exec/mpi/mpi_world.hpp), the processes form a group
// (mpi_process_group.hpp) and their stages talk over MPI (mpi_link.hpp); the
// rest is the shared runtime's (exec/runtime/trainer.hpp train_in_group).
// Declared in every build: without MPI (GPIPE_MPI off) it says so.
#pragma once

#include <string>

#include "exec/cpu/cpu_backend.hpp"

namespace gpipe::exec::mpi {

// Whether this build can run CPU ranks as processes.
[[nodiscard]] bool built_with_mpi();

// Trains this process's rank. Throws InputError when the launch does not fit
// the schedule (one process per rank), RunError on a failure (this process's,
// or the line another process announced), or when this build has no MPI.
// `launcher` names what started the processes, for messages ("mpirun", "srun").
[[nodiscard]] Trained<cpu::CpuBackend> train_as_mpi_process(const TrainOptions& options,
                                                           const std::string& launcher);

}  // namespace gpipe::exec::mpi
