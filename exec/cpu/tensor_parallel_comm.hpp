// The tensor-parallel group a CPU rank's blocks are split over (Megatron-LM's
// split, models/tensor_parallel.hpp): T processes hold each block's heads and
// feed-forward columns in T parts, and sum their partial outputs, and their
// partial input gradients, over the group. What carries the sums is the
// launch's: MPI between processes (exec/mpi/mpi_tensor_parallel.hpp).
#pragma once

#include <span>

namespace gpipe::exec::cpu {

class TensorParallelComm {
 public:
  virtual ~TensorParallelComm() = default;
  [[nodiscard]] virtual int size() const = 0;  // T
  [[nodiscard]] virtual int rank() const = 0;  // this process's part, 0 to T - 1
  // `values` summed over the group, in place, in every member; returns once
  // the sum is here (a block's next step needs it). Throws Aborted when the
  // run is aborted meanwhile.
  virtual void all_reduce_sum(std::span<float> values) = 0;
};

}  // namespace gpipe::exec::cpu
