// The observer of a rank's MemoryAccount: turns every change of the rank's
// activation bytes into a MemorySample of the measured timeline, timed from
// the step's common start. It records only the step it was started for (the
// last one), so a long run keeps one step's samples.
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

  // Drops what was recorded and records from now on, timed from `step_start`.
  void start(Clock::time_point step_start);
  // The account's observer: the rank now holds `bytes`.
  void record(std::int64_t bytes);
  [[nodiscard]] std::vector<schedules::MemorySample> samples() const;

 private:
  schedules::Rank rank_;
  // The account calls record() under its own lock; this one nests inside it.
  mutable std::mutex mutex_;
  bool recording_ = false;
  Clock::time_point step_start_;
  std::vector<schedules::MemorySample> samples_;
};

}  // namespace gpipe::exec
