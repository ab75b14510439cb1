// `gpipe-run infer` under mpirun or srun: the inference stream's ranks
// (exec/inference/serving_rank.hpp) as processes, one stage each, over MPI.
// Activations travel on MpiLink, one tag per stage boundary (MPI keeps a
// sender's messages on one tag in order, and items go in order). Stage 0's
// process admits items; the last stage's sends each completion back to it,
// which the closed loop and the in-flight cap wait for. The processes agree
// on one clock (MpiProcessGroup) and the run starts at a barrier, from
// rank 0's instant. At the end every process's record reaches the reporter,
// the last stage's process, which assembles the stream. Declared in every
// build: without MPI (GPIPE_MPI off) it says so.
#pragma once

#include <optional>
#include <string>

#include "exec/inference/cpu_serving.hpp"
#include "exec/runtime/process_group.hpp"

namespace gpipe::exec::mpi {

struct ServedProcess {
  std::optional<inference::ServingResult> result;  // on the reporter alone
  ClockAgreement clock;
};

// Serves this process's stage. Throws InputError when the launch does not
// fit (one process per stage), RunError on a failure (this process's, or the
// line another process announced), or when this build has no MPI.
// `launcher` names what started the processes ("mpirun", "srun"); `device`
// describes where the ranks run, for the result.
[[nodiscard]] ServedProcess serve_as_mpi_process(const inference::ServingRequest& request,
                                                       const std::string& launcher, const std::string& device);

}  // namespace gpipe::exec::mpi
