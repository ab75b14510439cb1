#include "exec/runtime/memory_recorder.hpp"

namespace gpipe::exec {

void MemoryRecorder::start(Clock::time_point step_start) {
  std::scoped_lock lock(mutex_);
  recording_ = true;
  step_start_ = step_start;
  steps_.emplace_back();
}

void MemoryRecorder::record(std::int64_t bytes) {
  const Clock::time_point now = Clock::now();
  std::scoped_lock lock(mutex_);
  if (!recording_) return;
  const std::int64_t time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - step_start_).count();
  steps_.back().push_back({rank_, time_ns, bytes});
}

std::vector<schedules::MemorySample> MemoryRecorder::samples(std::size_t i) const {
  std::scoped_lock lock(mutex_);
  return i < steps_.size() ? steps_[i] : std::vector<schedules::MemorySample>{};
}

}  // namespace gpipe::exec
