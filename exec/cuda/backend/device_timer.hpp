// The action timers of the CUDA backend: what the runtime's ActionTimer
// (exec/runtime/action_timer.hpp) brackets, measured on the GPU. A compute
// action's work runs on its rank's compute stream; a link brackets a
// transfer's work on the stream it runs on (begin_on / end_on). Two timers:
// - CuptiActionTimer (the default): an external correlation id per action, so
//   the action's interval is its kernels' and copies' own GPU timestamps;
// - EventActionTimer: a CUDA event before and after each action on its
//   stream, for machines where CUPTI cannot collect (another profiler holds it).
// A SEND on one GPU is not bracketed: its RECV's copy moves its bytes
// (exec/runtime/step_timeline.hpp gives it that interval).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "exec/cuda/kernels/launch.hpp"
#include "exec/runtime/action_timer.hpp"

namespace gpipe::exec::cuda {

class DeviceTimer : public ActionTimer {
 public:
  explicit DeviceTimer(int num_ranks) : compute_(static_cast<std::size_t>(num_ranks), nullptr) {}

  // The stream `rank`'s compute actions run on; set before the workers start.
  void set_compute_stream(schedules::Rank rank, StreamHandle stream) { compute_.at(rank.at()) = stream; }

  void begin(const ActionMark& mark) override { begin_on(mark, compute_stream(mark.rank)); }
  void end(const ActionMark& mark) override { end_on(mark, compute_stream(mark.rank)); }
  // Around enqueueing a measured action's work on `stream`.
  virtual void begin_on(const ActionMark& mark, StreamHandle stream) = 0;
  virtual void end_on(const ActionMark& mark, StreamHandle stream) = 0;

 protected:
  [[nodiscard]] StreamHandle compute_stream(schedules::Rank rank) const {
    if (rank.value < 0 || rank.at() >= compute_.size()) {
      throw std::out_of_range(fmt::format("device timer: no rank {}", rank.value));
    }
    return compute_[rank.at()];
  }
  [[nodiscard]] int num_ranks() const { return static_cast<int>(compute_.size()); }

 private:
  std::vector<StreamHandle> compute_;  // per rank
};

// Brackets a transfer's work on `stream` for the lifetime of the scope:
// nothing when `timer` is null or the action is not measured.
class TimedOnStream {
 public:
  TimedOnStream(DeviceTimer* timer, const ActionMark& mark, StreamHandle stream)
      : timer_(timer != nullptr && mark.measured() ? timer : nullptr), mark_(mark), stream_(stream) {
    if (timer_ != nullptr) timer_->begin_on(mark_, stream_);
  }
  ~TimedOnStream() {
    if (timer_ == nullptr) return;
    try {
      timer_->end_on(mark_, stream_);
    } catch (...) {  // a destructor must not throw; a missing end shows as a missing interval
    }
  }
  TimedOnStream(const TimedOnStream&) = delete;
  TimedOnStream& operator=(const TimedOnStream&) = delete;

 private:
  DeviceTimer* timer_;
  ActionMark mark_;
  StreamHandle stream_;
};

}  // namespace gpipe::exec::cuda
