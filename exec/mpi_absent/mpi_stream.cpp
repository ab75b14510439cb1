// exec/mpi/mpi_serving.hpp in a build without MPI (GPIPE_MPI off): it says so.
#include "exec/mpi/mpi_serving.hpp"

#include "base/error.hpp"

namespace gpipe::exec::mpi {

ServedProcess serve_as_mpi_process(const inference::ServingRequest& /*request*/, const std::string& /*launcher*/,
                                         const std::string& /*device*/) {
  throw RunError("this gpipe-run was built without MPI (GPIPE_MPI off, or no libopenmpi-dev): it cannot run "
                 "CPU ranks as processes; run it without a launcher");
}

}  // namespace gpipe::exec::mpi
