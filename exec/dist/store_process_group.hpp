// The processes of a run meeting at the rendezvous store (exec/dist/
// tcp_store.hpp), as NCCL's processes do: the store's barrier before each
// step, the parts through the store. A wait at the store cannot be woken, so
// a failure here is not announced: the others leave when the store's timeout
// passes, naming the wait. Clocks: each process's own (no agreement). With
// data parallelism, D replicas of K processes meet at one store.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/dist/rank_part.hpp"
#include "exec/dist/store_step_sync.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/process_group.hpp"

namespace gpipe::exec {

class StoreProcessGroup final : public ProcessGroup {
 public:
  // This process is `world_rank` of `world_size`, in replicas of
  // `ranks_per_replica` processes each (0: one replica of them all): world
  // rank d K + r is rank r of replica d, a replica's ranks consecutive, as
  // the simulator places them (exec/mpi/mpi_process_group.hpp alike).
  StoreProcessGroup(TcpStore& store, int world_rank, int world_size, int ranks_per_replica = 0)
      : store_(store),
        world_rank_(world_rank),
        world_size_(world_size),
        ranks_(ranks_per_replica > 0 ? ranks_per_replica : world_size),
        sync_(store, world_rank, world_size) {
    if (ranks_ < 1 || world_size_ % ranks_ != 0) {
      throw std::logic_error("a store group's replicas must each hold the same number of processes");
    }
  }

  [[nodiscard]] int rank() const override { return world_rank_ % ranks_; }
  [[nodiscard]] int replica() const override { return world_rank_ / ranks_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  [[nodiscard]] StepSync& step_sync() override { return sync_; }
  [[nodiscard]] ClockAgreement clock() const override {
    return {"each process's own clock, from the store's barrier", 0};
  }
  [[nodiscard]] std::vector<RankPart> exchange_parts(const RankPart& mine, schedules::Rank reporter) override {
    return exec::exchange_parts(store_, mine, ranks_, reporter, replica(), world_size_ / ranks_);
  }
  [[nodiscard]] std::string share_from_rank0(const std::string& key, const std::string& value) override {
    const std::string at = replica() == 0 ? key : fmt::format("{}/replica{}", key, replica());
    if (rank() == 0) store_.set(at, value);
    return store_.get(at);
  }
  [[nodiscard]] std::string share_across_replicas(const std::string& key, const std::string& value) override {
    const std::string at = fmt::format("{}/rank{}", key, rank());
    if (replica() == 0) store_.set(at, value);
    return store_.get(at);
  }
  void announce_failure(const std::string& /*line*/) noexcept override {}

 private:
  TcpStore& store_;
  int world_rank_;
  int world_size_;
  int ranks_;  // K: processes per replica
  StoreStepSync sync_;
};

}  // namespace gpipe::exec
