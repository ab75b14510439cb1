// Who may enter the pipeline, and when (docs/design.md, "Inference"): stage 0's
// rank asks before each item, the last stage's rank reports each completion.
// Item r may enter once it has arrived (open loop: at its arrival time from
// the run's start; closed loop: at once) and item r - B has completed.
// Ranks are threads of one process. abort() wakes a waiter, which then
// throws Aborted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "exec/runtime/spin_wait.hpp"

namespace gpipe::exec::inference {

class Admission {
 public:
  using Clock = std::chrono::steady_clock;

  // `arrivals_ns[r]`: item r's arrival from the run's start (all 0 in the
  // closed loop). A waiter polls for `spin` before it sleeps, and an open
  // loop's arrival is waited for by polling its last `spin` (a sleeping
  // thread wakes tens of microseconds late: exec/runtime/spin_wait.hpp).
  Admission(std::vector<std::int64_t> arrivals_ns, int in_flight, bool closed_loop,
            SpinBudget spin = SpinBudget::zero());

  // Sets the run's start; before any wait.
  void start(Clock::time_point origin) { origin_ = origin; }
  // Blocks until item r may enter; returns its arrival (the admission, in the
  // closed loop) and its admission, in ns from the start. The admission is the
  // moment it could enter, max(its arrival, the completion of item r - B),
  // whether or not stage 0 was free then: a busy stage 0 is waited for inside
  // the pipeline, as the simulator counts it.
  struct Entry {
    std::int64_t arrival_ns = 0;
    std::int64_t admitted_ns = 0;
  };
  [[nodiscard]] Entry admit(int item);
  // Item r left the last stage at `completed_ns` from the start.
  void completed(int item, std::int64_t completed_ns);
  void abort();

 private:
  std::vector<std::int64_t> arrivals_ns_;
  int in_flight_;
  bool closed_loop_;
  SpinBudget spin_;
  Clock::time_point origin_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int completed_ = 0;  // items 0..completed_-1 have completed (they complete in order)
  std::vector<std::int64_t> completed_ns_;  // per item, as reported
  bool aborted_ = false;
};

}  // namespace gpipe::exec::inference
