// The step barrier of ranks that are processes: every rank meets at the
// rendezvous store's barrier before each step. A wait at the store cannot be
// woken by an abort; it ends, with a RunError naming the barrier, when the
// store's timeout passes (the run's watchdog time, see exec/runtime/trainer.hpp).
#pragma once

#include <fmt/format.h>

#include "exec/dist/tcp_store.hpp"
#include "exec/runtime/step_sync.hpp"

namespace gpipe::exec {

class StoreStepSync final : public StepSync {
 public:
  StoreStepSync(TcpStore& store, int rank, int world_size)
      : store_(store), rank_(rank), world_size_(world_size) {}

  [[nodiscard]] Clock::time_point arrive(int step) override {
    store_.barrier(fmt::format("gpipe/step{}", step), rank_, world_size_);
    return Clock::now();
  }
  void abort() override {}

 private:
  TcpStore& store_;
  int rank_;
  int world_size_;
};

}  // namespace gpipe::exec
