// The observer of a CUDA rank's MemoryAccount: each change of the rank's
// activation bytes, tagged with the action its worker was enqueueing, for the
// measured steps only. The GPU has not run the action yet when its memory is
// charged, so times come later, from the action's measured interval
// (step_timeline.hpp, place_memory_samples). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "exec/cuda/backend/step_timeline.hpp"

namespace gpipe::exec::cuda {

class ActionMemoryLog {
 public:
  explicit ActionMemoryLog(int rank) : rank_(rank) {}

  // Starts logging a new measured step (slot = how many were started before).
  void start_step() {
    std::scoped_lock lock(mutex_);
    steps_.emplace_back();
    logging_ = true;
  }
  // The worker's position: the index of the action being enqueued, -1 between actions.
  void set_action(int index) { action_.store(index, std::memory_order_relaxed); }
  // The account's observer.
  void record(std::int64_t bytes) {
    const int index = action_.load(std::memory_order_relaxed);
    std::scoped_lock lock(mutex_);
    if (logging_) steps_.back().push_back({rank_, index, bytes});
  }
  [[nodiscard]] std::vector<ActionMemorySample> samples(std::size_t slot) const {
    std::scoped_lock lock(mutex_);
    return slot < steps_.size() ? steps_[slot] : std::vector<ActionMemorySample>{};
  }

 private:
  int rank_;
  std::atomic<int> action_{-1};
  mutable std::mutex mutex_;
  bool logging_ = false;
  std::vector<std::vector<ActionMemorySample>> steps_;
};

}  // namespace gpipe::exec::cuda
