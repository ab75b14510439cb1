// Data-parallel gradient reduction between CPU processes (the seam of
// exec/runtime/gradient_reducer.hpp) over MPI: each of a stage's gradient
// tensors is summed in place over its data-parallel group, one non-blocking
// MPI_Iallreduce per tensor (a tensor over `bucket_bytes` in pieces of that
// size). The simulator prices the stage's bytes in 25 MB buckets
// (sim/data_parallel.hpp, PyTorch DDP's); the executor's collectives are
// more and smaller, the same bytes with more latencies (a microsecond or so
// each between two processes of one node). Copying the gradients into
// buckets, as DDP does, cost 3.7 ms a step for 12 MB here, time the model
// does not have; in place, none. The
// worker's calls between actions test the requests, which is what moves
// Open MPI's collectives on and notes when each reduction ended; it is timed
// from the last replica's start. Only the rank's worker thread calls it
// during a run.
//
// Under ZeRO 1 (exec/runtime/zero_shards.hpp) each piece is reduce-scattered
// in place instead (MPI_Ireduce_scatter: this replica's sums land at the
// piece's start, and are moved to its own run once the reduction has ended),
// and gather() all-gathers the updated weights piece by piece
// (MPI_Iallgatherv in place).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <mpi.h>

#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/runtime/gradient_reducer.hpp"
#include "exec/runtime/reduction_pieces.hpp"
#include "exec/runtime/tensor.hpp"
#include "exec/runtime/zero_shards.hpp"

namespace gpipe::exec::mpi {

class MpiGradientReducer final : public GradientReducer<Tensor> {
 public:
  // `group`: the processes of this pipeline rank in every replica
  // (MpiProcessGroup::data_parallel_comm()); `one_clock`: they all run on
  // one node (MpiProcessGroup::one_node()), so their starts compare.
  // `zero`: ZeRO's stage, 0 or 1.
  MpiGradientReducer(const MpiWorld& world, FailureWatch& watch, MPI_Comm group, std::int64_t bucket_bytes,
                     bool one_clock, int zero = 0);
  ~MpiGradientReducer() override;
  MpiGradientReducer(const MpiGradientReducer&) = delete;
  MpiGradientReducer(MpiGradientReducer&&) = delete;
  MpiGradientReducer& operator=(const MpiGradientReducer&) = delete;

  void start(schedules::Stage stage, std::vector<Tensor*> gradients) override;
  void progress() override;
  Times wait(schedules::Stage stage) override;
  double sum(double value) override;
  void sum_in_place(Tensor& tensor) override;
  void gather(schedules::Stage stage, std::vector<Tensor*> values) override;
  void abort() override { watch_.abort(); }

 private:
  struct Pending {
    std::vector<MPI_Request> requests;
    // ZeRO 1: the pieces' cut (its counts stay alive while MPI reads them)
    // and the gradients they are of.
    std::vector<ShardedPiece> shards;
    std::vector<Tensor*> gradients;
    Clock::time_point start;
    Clock::time_point end;
    bool ended = false;
  };

  // Whether every request of `p` has completed (testing them); notes its end.
  bool test(Pending& p);
  // ZeRO 1, once `p` has ended: each piece's sums from its start to this replica's run.
  void place_sums(const Pending& p) const;

  const MpiWorld& world_;
  FailureWatch& watch_;
  MPI_Comm group_;
  std::int64_t bucket_floats_;
  bool one_clock_;
  int zero_;
  int replicas_ = 1;
  int replica_ = 0;
  std::map<int, Pending> pending_;  // by stage; its gradients stay the stage's
  std::vector<ShardedPiece> gather_cut_;  // the last gather's pieces
};

}  // namespace gpipe::exec::mpi
