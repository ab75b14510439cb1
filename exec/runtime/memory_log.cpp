#include "exec/runtime/memory_log.hpp"

#include <new>

namespace gpipe::exec {

void MemoryLog::start_step(Clock::time_point start) {
  std::scoped_lock lock(mutex_);
  logging_ = true;
  step_start_ = start;
  steps_.emplace_back();
}

void MemoryLog::record(std::int64_t bytes) noexcept {
  const Clock::time_point now = Clock::now();
  const int action = action_.load(std::memory_order_relaxed);
  std::scoped_lock lock(mutex_);
  if (!logging_) return;
  const std::int64_t host_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - step_start_).count();
  try {
    steps_.back().push_back({action, host_ns, bytes});
  } catch (const std::bad_alloc&) {
    incomplete_ = true;  // said when the changes are read; a destructor must not throw
  }
}

std::vector<MemoryChange> MemoryLog::changes(std::size_t slot) const {
  std::scoped_lock lock(mutex_);
  if (incomplete_) throw std::bad_alloc();
  return slot < steps_.size() ? steps_[slot] : std::vector<MemoryChange>{};
}

}  // namespace gpipe::exec
