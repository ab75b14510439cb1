// Where the ranks meet before each step, so that no rank starts step t+1
// while another still runs step t and a step's actions are timed from one
// moment: the StepBarrier (exec/runtime/step_barrier.hpp) for the ranks of
// one process, the rendezvous store's barrier (exec/dist/store_step_sync.hpp)
// for ranks in other processes.
#pragma once

#include <chrono>

namespace gpipe::exec {

class StepSync {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~StepSync() = default;

  // Returns once every rank has reached the start of `step`, with that moment
  // on this host's clock (the same for every rank of this process). Throws
  // Aborted after abort(), or RunError when the others do not come in time.
  [[nodiscard]] virtual Clock::time_point arrive(int step) = 0;

  // Wakes every waiter that can be woken; idempotent, safe from any thread.
  virtual void abort() = 0;
};

}  // namespace gpipe::exec
