// A rank's tensor-parallel group over MPI (exec/cpu/tensor_parallel_comm.hpp):
// its T processes, one part each of its blocks, sum their partial outputs and
// input gradients with a blocking all-reduce in place, polled as every wait
// here is, so that an abort or a peer's failure ends it.
#pragma once

#include <span>

#include <mpi.h>

#include "exec/cpu/tensor_parallel_comm.hpp"
#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_world.hpp"

namespace gpipe::exec::mpi {

class MpiTensorParallel final : public cpu::TensorParallelComm {
 public:
  // `group`: the rank's parts, by part (MpiProcessGroup::tensor_parallel_comm()).
  MpiTensorParallel(const MpiWorld& world, FailureWatch& watch, MPI_Comm group);

  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] int rank() const override { return rank_; }
  void all_reduce_sum(std::span<float> values) override;

 private:
  const MpiWorld& world_;
  FailureWatch& watch_;
  MPI_Comm group_;
  int size_ = 1;
  int rank_ = 0;
};

}  // namespace gpipe::exec::mpi
