// The processes of a CPU run under mpirun or srun, one rank each, as a
// ProcessGroup (exec/runtime/process_group.hpp) over MPI.
//
// One clock: each step starts at a non-blocking barrier, after which rank 0
// reads its clock and broadcasts it; every process takes that instant, on
// its own clock, as the step's origin, so every rank's intervals are on one
// time base. On one node the steady clock (CLOCK_MONOTONIC) is the same in
// every process. Across nodes, each process's offset to rank 0 is estimated
// once, before the run, by a ping-pong (the round of least round trip, as
// NTP and PTP do), with half that round trip as its error bound.
// GPIPE_MPI_CLOCK=ping-pong uses the estimate on one node too (for tests).
//
// With data parallelism the world holds D replicas of the pipeline, and with
// tensor parallelism each rank is T processes, one part each of its stages'
// split: part t of rank r of replica d is world rank (d K + r) T + t (a
// rank's parts, then a replica's ranks, consecutive, as the simulator places
// them, plan/cluster.hpp). The parts t of one replica form a pipeline of
// their own (the link joins rank r's part t to rank r+1's part t), which
// gathers its own parts; every step starts at one barrier of the world; the
// processes of one rank and part in every replica form a data-parallel group
// (data_parallel_comm()), and a rank's T parts its tensor-parallel group
// (tensor_parallel_comm()).
//
// With context parallelism each stage is C x T processes: member c's part t
// of rank r of replica d is world rank ((d K + r) C + c) T + t (plan/cluster.hpp's
// order, T inside, then C). Each (member, part) is a pipeline of its own as
// above; the members of one part of a rank form its context-parallel group
// (context_parallel_comm()), and the gradient group (data_parallel_comm())
// holds every replica's members of that part, D x C processes.
//
// Every wait polls the FailureWatch, so a failure another process announces
// ends it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/mpi/failure_watch.hpp"
#include "exec/mpi/mpi_world.hpp"
#include "exec/runtime/process_group.hpp"

namespace gpipe::exec::mpi {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Collective: every process constructs it, and the clocks are agreed here.
  // `replicas` (D) x `tensor_parallel` (T) x `context_parallel` (C) must
  // divide the world's size.
  MpiProcessGroup(MpiWorld& world, FailureWatch& watch, int replicas = 1, int tensor_parallel = 1,
                  int context_parallel = 1);
  ~MpiProcessGroup() override;
  MpiProcessGroup(const MpiProcessGroup&) = delete;
  MpiProcessGroup& operator=(const MpiProcessGroup&) = delete;

  [[nodiscard]] int rank() const override { return (world_.rank() / parts_) % ranks_per_replica_; }
  [[nodiscard]] int world_size() const override { return world_.size(); }
  [[nodiscard]] int replica() const override { return world_.rank() / (parts_ * ranks_per_replica_); }
  [[nodiscard]] int tensor_parallel_rank() const override { return world_.rank() % tensor_; }
  [[nodiscard]] int context_parallel_rank() const override { return (world_.rank() / tensor_) % (parts_ / tensor_); }
  // The world rank of pipeline rank `rank` of this process's replica and part.
  [[nodiscard]] int world_rank_of(int rank) const {
    return (replica() * ranks_per_replica_ + rank) * parts_ + world_.rank() % parts_;
  }
  // How far apart consecutive pipeline ranks of one part are in the world: T x C.
  [[nodiscard]] int rank_stride() const { return parts_; }
  // The processes of this process's pipeline rank and tensor part in every
  // replica and context member, by replica then member (MPI_COMM_NULL with
  // neither data nor context parallelism).
  [[nodiscard]] MPI_Comm data_parallel_comm() const { return data_parallel_comm_; }
  // This rank's T parts, by part (MPI_COMM_NULL without tensor parallelism).
  [[nodiscard]] MPI_Comm tensor_parallel_comm() const { return tensor_parallel_comm_; }
  // This rank's C members of its part, by member (MPI_COMM_NULL without
  // context parallelism).
  [[nodiscard]] MPI_Comm context_parallel_comm() const { return context_parallel_comm_; }
  [[nodiscard]] StepSync& step_sync() override { return sync_; }
  [[nodiscard]] ClockAgreement clock() const override { return clock_; }
  [[nodiscard]] std::vector<RankPart> exchange_parts(const RankPart& mine, schedules::Rank reporter) override;
  // Every process of this replica gives a text; its reporter (a pipeline
  // rank) gets them all, in rank order, the others none.
  [[nodiscard]] std::vector<std::string> gather_text(const std::string& mine, schedules::Rank reporter);
  [[nodiscard]] std::string share_from_rank0(const std::string& key, const std::string& value) override;
  void announce_failure(const std::string& line) noexcept override;

  // Whether every process runs on one node (one steady clock).
  [[nodiscard]] bool one_node() const { return one_node_; }
  // This process's clock minus rank 0's, in ns (0 on rank 0 and on its node).
  [[nodiscard]] std::int64_t offset_ns() const { return offset_ns_; }

 private:
  class Sync final : public StepSync {
   public:
    explicit Sync(MpiProcessGroup& group) : group_(group) {}
    [[nodiscard]] Clock::time_point arrive(int step) override;
    void abort() override { group_.watch_.abort(); }

   private:
    MpiProcessGroup& group_;
  };

  void agree_on_clocks();

  MpiWorld& world_;
  FailureWatch& watch_;
  int tensor_;             // T
  int parts_;              // T x C: a stage's processes
  int ranks_per_replica_;  // K
  MPI_Comm data_parallel_comm_ = MPI_COMM_NULL;
  MPI_Comm tensor_parallel_comm_ = MPI_COMM_NULL;
  MPI_Comm context_parallel_comm_ = MPI_COMM_NULL;
  Sync sync_;
  ClockAgreement clock_;
  std::int64_t offset_ns_ = 0;
  bool one_node_ = false;
};

}  // namespace gpipe::exec::mpi
