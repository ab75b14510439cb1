// A rank's context-parallel group over MPI (exec/cpu/context_parallel_comm.hpp):
// its C processes gather keys and values with an all-gather and return their
// gradients with a reduce-scatter, each started non-blocking and polled as
// every wait here is, so that an abort or a peer's failure ends it.
#pragma once

#include <span>

#include <mpi.h>

#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_world.hpp"

namespace gpipe::exec::mpi {

class MpiContextParallel final : public cpu::ContextParallelComm {
 public:
  // `group`: the rank's context parts, by place (MpiProcessGroup::context_parallel_comm()).
  MpiContextParallel(const MpiWorld& world, FailureWatch& watch, MPI_Comm group);

  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] int rank() const override { return rank_; }
  void all_gather(std::span<const float> mine, std::span<float> all) override;
  void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) override;

 private:
  const MpiWorld& world_;
  FailureWatch& watch_;
  MPI_Comm group_;
  int size_ = 1;
  int rank_ = 0;
};

}  // namespace gpipe::exec::mpi
