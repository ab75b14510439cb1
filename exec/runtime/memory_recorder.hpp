// The observer of a rank's MemoryAccount: turns every change of the rank's
// activation bytes into a MemorySample of the measured timeline, timed from
// the step's common start. It records only the steps it is started for (the
// measured ones, at the end of a run), so a long run keeps few samples.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "schedules/ids.hpp"
#include "schedules/timeline.hpp"

namespace gpipe::exec {

class MemoryRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  explicit MemoryRecorder(schedules::Rank rank) : rank_(rank) {}

  // Starts recording a new step, timed from `step_start`.
  void start(Clock::time_point step_start);
  // The account's observer: the rank now holds `bytes`.
  void record(std::int64_t bytes);
  // The samples of the i-th recorded step (0: the first started).
  [[nodiscard]] std::vector<schedules::MemorySample> samples(std::size_t i) const;

 private:
  schedules::Rank rank_;
  // The account calls record() under its own lock; this one nests inside it.
  mutable std::mutex mutex_;
  bool recording_ = false;
  Clock::time_point step_start_;
  std::vector<std::vector<schedules::MemorySample>> steps_;
};

}  // namespace gpipe::exec
