// How the CUDA executor measures when each action ran on the GPU: the seam
// between the worker and its clock. The worker brackets the enqueueing of
// every action that has GPU work of its own (compute actions and RECVs, whose
// copy it enqueues); SENDs are not bracketed (step_timeline.hpp gives them
// their RECV's interval). Two timers:
// - CuptiActionTimer (the default): an external correlation id per action, so
//   the action's interval is its kernels' and copies' own GPU timestamps;
// - EventActionTimer: a CUDA event before and after each action on its stream,
//   for machines where CUPTI cannot collect (another profiler holds it).
#pragma once

#include <cstddef>

#include "exec/cuda/backend/step_timeline.hpp"
#include "exec/cuda/kernels/launch.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec::cuda {

class ActionTimer {
 public:
  virtual ~ActionTimer() = default;

  // Measured step `slot` (0 = the first measured step) starts on `rank`:
  // called by each rank's thread right after the step barrier, before it
  // enqueues anything of the step. The step's origin is the earliest of these.
  virtual void start_step(int rank, int slot, StreamHandle compute) = 0;
  // Around enqueueing action `index` of `rank`'s program, whose GPU work goes to `stream`.
  virtual void begin(int rank, int slot, std::size_t index, const schedules::Action& action,
                     StreamHandle stream) = 0;
  virtual void end(int rank, int slot, std::size_t index, const schedules::Action& action,
                   StreamHandle stream) = 0;
  // Once every rank's streams are synchronised and collection has stopped:
  // the GPU intervals of step `slot`, in ns from its origin.
  [[nodiscard]] virtual MeasuredIntervals intervals(int slot) = 0;
  // "cupti" or "events", for the trace and the log.
  [[nodiscard]] virtual const char* name() const = 0;
};

// Brackets one action for the lifetime of the scope; does nothing when `timer` is null
// (an unmeasured step). Stream handles keep CUDA headers out, so the
// timers that need no GPU are tested on the host.
class TimedScope {
 public:
  TimedScope(ActionTimer* timer, int rank, int slot, std::size_t index,
             const schedules::Action& action, StreamHandle stream)
      : timer_(timer), rank_(rank), slot_(slot), index_(index), action_(action), stream_(stream) {
    if (timer_ != nullptr) timer_->begin(rank_, slot_, index_, action_, stream_);
  }
  ~TimedScope() {
    if (timer_ == nullptr) return;
    try {
      timer_->end(rank_, slot_, index_, action_, stream_);
    } catch (...) {  // a destructor must not throw; a missing end shows as a missing interval
    }
  }
  TimedScope(const TimedScope&) = delete;
  TimedScope& operator=(const TimedScope&) = delete;

 private:
  ActionTimer* timer_;
  int rank_;
  int slot_;
  std::size_t index_;
  schedules::Action action_;
  StreamHandle stream_;
};

}  // namespace gpipe::exec::cuda
