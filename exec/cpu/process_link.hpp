// The link of CPU ranks that are processes (exec/mpi/mpi_link.hpp): a Link
// of host tensors that also waits, at the run's end, until its sends have
// left this process, so that nothing is in flight when MPI shuts down.
#pragma once

#include "exec/runtime/link.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

class ProcessLink : public Link<Tensor> {
 public:
  virtual void flush() = 0;
};

}  // namespace gpipe::exec::cpu
