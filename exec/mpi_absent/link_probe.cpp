// exec/mpi/link_probe.hpp in a build without MPI (GPIPE_MPI off): it says so.
#include "exec/mpi/link_probe.hpp"

#include "base/error.hpp"

namespace gpipe::exec::mpi {

ProbedLink probe_mpi_link(const LinkProbeOptions& /*options*/) {
  throw RunError("this gpipe-run was built without MPI (GPIPE_MPI off, or no libopenmpi-dev): it cannot "
                 "measure a link between processes");
}

}  // namespace gpipe::exec::mpi
