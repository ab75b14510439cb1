// One rank's activation memory over the measured steps: the observer of the
// rank's MemoryAccount. Each change of the bytes is logged with the action
// the rank's worker was at (running it, or on a GPU enqueueing it) and the
// host time since the step's start. Where a change lands on the measured
// timeline is the backend's to say (MemoryPlacement, step_timeline.hpp): at
// its host time where the host ran the action (the CPU), or at the bounds of
// the action's measured interval where a device ran it after the host had
// enqueued it (a GPU).
//
// It logs only the steps it is started for (the measured ones, at the end of
// a run), so a long run keeps few changes. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "schedules/ids.hpp"

namespace gpipe::exec {

struct MemoryChange {
  int action_index = -1;    // into the rank's program; -1 between actions
  std::int64_t host_ns = 0;  // since the step's start, on this host's clock
  std::int64_t bytes = 0;    // the rank's activation bytes from here on
  bool operator==(const MemoryChange&) const = default;
};

class MemoryLog {
 public:
  using Clock = std::chrono::steady_clock;

  explicit MemoryLog(schedules::Rank rank) : rank_(rank) {}

  [[nodiscard]] schedules::Rank rank() const { return rank_; }
  // A measured step starts at `start`: its changes are logged from here on.
  void start_step(Clock::time_point start);
  // The worker's position: the index of its current action, -1 between actions.
  void set_action(int index) { action_.store(index, std::memory_order_relaxed); }
  // The account's observer: the rank now holds `bytes`. Never throws: it runs
  // where a tensor is released, in destructors; a change it has no memory to
  // log marks the log incomplete instead.
  void record(std::int64_t bytes) noexcept;
  // The changes of the i-th measured step (0: the first started); throws
  // std::bad_alloc when a change could not be logged for want of memory.
  [[nodiscard]] std::vector<MemoryChange> changes(std::size_t slot) const;

 private:
  schedules::Rank rank_;
  std::atomic<int> action_{-1};
  // The account calls record() under its own lock; this one nests inside it.
  mutable std::mutex mutex_;
  bool logging_ = false;
  bool incomplete_ = false;  // a change was lost: out of memory
  Clock::time_point step_start_;
  std::vector<std::vector<MemoryChange>> steps_;
};

}  // namespace gpipe::exec
