#include "exec/runtime/step_barrier.hpp"

#include <stdexcept>

#include "exec/runtime/aborted.hpp"

namespace gpipe::exec {

StepBarrier::StepBarrier(int parties) : parties_(parties) {
  if (parties < 1) throw std::invalid_argument("a barrier needs at least one party");
}

StepBarrier::Clock::time_point StepBarrier::arrive_and_wait() {
  std::unique_lock lock(mutex_);
  if (aborted_) throw Aborted();
  const std::int64_t generation = generation_;
  if (++waiting_ == parties_) {
    waiting_ = 0;
    ++generation_;
    start_ = Clock::now();
    const Clock::time_point start = start_;
    lock.unlock();
    released_.notify_all();
    return start;
  }
  released_.wait(lock, [&] { return aborted_ || generation_ != generation; });
  if (generation_ == generation) throw Aborted();  // aborted before the step could start
  return start_;
}

void StepBarrier::abort() {
  {
    std::scoped_lock lock(mutex_);
    aborted_ = true;
  }
  released_.notify_all();
}

}  // namespace gpipe::exec
