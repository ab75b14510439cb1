// The processes of a run with one rank per process, as the trainer sees
// them: where each step starts together, how the measured parts reach the
// reporter, how rank 0 shares a value (NCCL's ids), and how a failure here
// reaches the others. Two kinds: the rendezvous store's (exec/dist/
// store_process_group.hpp: TCP, for NCCL's processes) and MPI's (exec/mpi/:
// the CPU backend under mpirun or srun).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/measurement.hpp"
#include "exec/runtime/step_sync.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

// How the processes' clocks were put on one time base.
struct ClockAgreement {
  std::string method = "one process";  // "shared monotonic clock (one node)", "ping-pong offsets"
  std::int64_t max_error_ns = 0;       // the estimate's bound over ranks: half the least round trip
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  // This process's rank in its pipeline, and how many processes there are
  // in all (every replica's).
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world_size() const = 0;
  // Data parallelism (docs/design.md "Data parallelism"): which of the run's
  // replicas of the pipeline this process belongs to; 0 without.
  [[nodiscard]] virtual int replica() const { return 0; }
  // Tensor parallelism: which part of its stage's split this process holds; 0 without.
  [[nodiscard]] virtual int tensor_parallel_rank() const { return 0; }
  // Context parallelism: which member of its stage's context-parallel group
  // this process is (whose tokens it holds); 0 without.
  [[nodiscard]] virtual int context_parallel_rank() const { return 0; }
  // Where the ranks meet before each step. Its arrive() returns the step's
  // start on this host's clock; for a group with one clock (ClockAgreement)
  // that moment is the same instant in every process.
  [[nodiscard]] virtual StepSync& step_sync() = 0;
  [[nodiscard]] virtual ClockAgreement clock() const = 0;
  // Every process of this replica gives its part; its reporter gets them
  // all, in rank order, the others none.
  [[nodiscard]] virtual std::vector<RankPart> exchange_parts(const RankPart& mine,
                                                             schedules::Rank reporter) = 0;
  // Rank 0's `value` in every process of this replica (`key` names it where
  // a store needs one): the pipeline's NCCL ids.
  [[nodiscard]] virtual std::string share_from_rank0(const std::string& key, const std::string& value) = 0;
  // Replica 0's `value` in every replica's process of this rank: the data-
  // parallel group's NCCL id. A group without replicas' collectives of its
  // own to set up (MPI's: its communicators) need not give it.
  [[nodiscard]] virtual std::string share_across_replicas(const std::string& /*key*/, const std::string& /*value*/) {
    throw std::logic_error("this process group shares nothing across replicas");
  }
  // This process's run failed with `line`: tell the others, where the group
  // can, so that each reports the failed rank and action instead of waiting
  // for its watchdog. Bounded in time; never throws.
  virtual void announce_failure(const std::string& line) noexcept = 0;
};

}  // namespace gpipe::exec
