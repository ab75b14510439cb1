// exec/mpi/mpi_run.hpp in a build without MPI (GPIPE_MPI off): it says so.
#include "exec/mpi/mpi_run.hpp"

namespace gpipe::exec::mpi {

bool built_with_mpi() { return false; }

Trained<cpu::CpuBackend> train_as_mpi_process(const TrainOptions& /*options*/, const std::string& /*launcher*/) {
  throw RunError("this gpipe-run was built without MPI (GPIPE_MPI off, or no libopenmpi-dev): it cannot run "
                 "CPU ranks as processes; run it without a launcher");
}

}  // namespace gpipe::exec::mpi
