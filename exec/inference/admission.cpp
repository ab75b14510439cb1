#include "exec/inference/admission.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::inference {

Admission::Admission(std::vector<std::int64_t> arrivals_ns, int in_flight, bool closed_loop, SpinBudget spin)
    : arrivals_ns_(std::move(arrivals_ns)),
      in_flight_(in_flight),
      closed_loop_(closed_loop),
      spin_(spin),
      completed_ns_(arrivals_ns_.size(), 0) {}

Admission::Entry Admission::admit(int item) {
  const std::int64_t arrival = arrivals_ns_.at(static_cast<std::size_t>(item));
  if (!closed_loop_) {
    const Clock::time_point at = origin_ + std::chrono::nanoseconds(arrival);
    std::this_thread::sleep_until(at - spin_);
    (void)spin_until([&] { return Clock::now() >= at; }, spin_ + spin_);
  }
  std::int64_t admitted = arrival;
  const auto may_enter = [&] { return aborted_ || completed_ > item - in_flight_; };
  (void)spin_until(
      [&] {
        const std::lock_guard lock(mutex_);
        return may_enter();
      },
      spin_);
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, may_enter);
    if (aborted_) throw Aborted();
    if (item >= in_flight_) {
      admitted = std::max(admitted, completed_ns_[static_cast<std::size_t>(item - in_flight_)]);
    }
  }
  return {closed_loop_ ? admitted : arrival, admitted};
}

void Admission::completed(int item, std::int64_t completed_ns) {
  {
    const std::lock_guard lock(mutex_);
    completed_ns_.at(static_cast<std::size_t>(item)) = completed_ns;
    completed_ = item + 1;
  }
  changed_.notify_all();
}

void Admission::abort() {
  {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  changed_.notify_all();
}

}  // namespace gpipe::exec::inference
