#include "exec/memory_recorder.hpp"

namespace gpipe::exec {

void MemoryRecorder::start(Clock::time_point step_start) {
  std::scoped_lock lock(mutex_);
  recording_ = true;
  step_start_ = step_start;
  samples_.clear();
}

void MemoryRecorder::record(std::int64_t bytes) {
  const Clock::time_point now = Clock::now();
  std::scoped_lock lock(mutex_);
  if (!recording_) return;
  const std::int64_t time_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - step_start_).count();
  samples_.push_back({rank_, time_ns, bytes});
}

std::vector<schedules::MemorySample> MemoryRecorder::samples() const {
  std::scoped_lock lock(mutex_);
  return samples_;
}

}  // namespace gpipe::exec
