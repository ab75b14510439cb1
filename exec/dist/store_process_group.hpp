// The processes of a run meeting at the rendezvous store (exec/dist/
// tcp_store.hpp), as NCCL's processes do: the store's barrier before each
// step, the parts through the store. A wait at the store cannot be woken, so
// a failure here is not announced: the others leave when the store's timeout
// passes, naming the wait. Clocks: each process's own (no agreement).
#pragma once

#include "exec/dist/rank_part.hpp"
#include "exec/dist/store_step_sync.hpp"
#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/process_group.hpp"

namespace gpipe::exec {

class StoreProcessGroup final : public ProcessGroup {
 public:
  StoreProcessGroup(TcpStore& store, int rank, int world_size)
      : store_(store), rank_(rank), world_size_(world_size), sync_(store, rank, world_size) {}

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  [[nodiscard]] StepSync& step_sync() override { return sync_; }
  [[nodiscard]] ClockAgreement clock() const override {
    return {"each process's own clock, from the store's barrier", 0};
  }
  [[nodiscard]] std::vector<RankPart> exchange_parts(const RankPart& mine, schedules::Rank reporter) override {
    return exec::exchange_parts(store_, mine, world_size_, reporter);
  }
  [[nodiscard]] std::string share_from_rank0(const std::string& key, const std::string& value) override {
    if (rank_ == 0) store_.set(key, value);
    return store_.get(key);
  }
  void announce_failure(const std::string& /*line*/) noexcept override {}

 private:
  TcpStore& store_;
  int rank_;
  int world_size_;
  StoreStepSync sync_;
};

}  // namespace gpipe::exec
