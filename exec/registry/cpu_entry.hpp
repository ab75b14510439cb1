// The CPU backend's entry in the registry: its ranks as threads of this
// process (exec/cpu/), or one rank per process under mpirun or srun over MPI
// (exec/mpi/); its profiler; its inference streams on threads
// (exec/inference/cpu_serving.hpp). Above all three, so that none of them
// includes another's entry.
#pragma once

#include "exec/backend.hpp"

namespace gpipe::exec {

[[nodiscard]] const Backend& cpu_entry();

}  // namespace gpipe::exec
