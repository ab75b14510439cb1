// The start of a training step for the ranks of one process (a StepSync): every
// rank's worker waits here until all have arrived, so that a step's actions are
// timed from one common moment and no rank starts step t+1 while another still
// runs step t. Abortable: abort() wakes every waiter, which then throws
// Aborted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "exec/runtime/step_sync.hpp"

namespace gpipe::exec {

class StepBarrier final : public StepSync {
 public:
  explicit StepBarrier(int parties);

  // Returns when all parties have arrived, with the moment the last one did:
  // the step's start, the same for every party. Throws Aborted after abort().
  [[nodiscard]] Clock::time_point arrive_and_wait();
  [[nodiscard]] Clock::time_point arrive(int /*step*/) override { return arrive_and_wait(); }
  void abort() override;

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int parties_;
  int waiting_ = 0;
  std::int64_t generation_ = 0;
  Clock::time_point start_;
  bool aborted_ = false;
};

}  // namespace gpipe::exec
