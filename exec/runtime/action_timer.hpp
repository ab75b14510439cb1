// How a run measures when each action ran: the seam between the runtime and a
// backend's clock. The worker brackets every compute action (F, B, R, STEP),
// a link brackets what it does for a SEND or a RECV, and the timer keeps one
// interval per (rank, action) of each measured step, in ns from the step's
// origin. Timers: HostTimer (exec/runtime/host_timer.hpp), the host's clock,
// for backends that compute on the calling thread; on a GPU, CUPTI or CUDA
// events (exec/cuda/backend/).
//
// An action a backend does not time (a SEND whose bytes move under its RECV,
// an action with no device work) gets its interval by the rules of
// exec/runtime/step_timeline.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/runtime/action_mark.hpp"
#include "schedules/action.hpp"
#include "schedules/ids.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

struct Interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool operator==(const Interval&) const = default;
};

// (rank, action) -> measured interval, in ns from the step's origin.
using MeasuredIntervals = std::map<std::pair<schedules::Rank, schedules::Action>, Interval>;

class ActionTimer {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~ActionTimer() = default;

  // Measured step `slot` starts on `rank`: called by the rank's thread as it
  // leaves the step barrier, at `start` on this host's clock, before it runs
  // anything of the step.
  virtual void start_step(schedules::Rank rank, int slot, Clock::time_point start) = 0;
  // Around the work of a measured action (mark.measured()).
  virtual void begin(const ActionMark& mark) = 0;
  virtual void end(const ActionMark& mark) = 0;
  // Once every rank of this process has stopped (and the backend has
  // finished): the intervals of step `slot`, for the ranks of this process.
  [[nodiscard]] virtual MeasuredIntervals intervals(int slot) = 0;
  // A data-parallel reduction, REDUCE_GRAD(s) on the rank's reduce stream:
  // from its start to the moment its end was seen, on this host's clock. It
  // runs beside the rank's actions, so it is recorded apart from them. A
  // timer of device work (CUPTI, CUDA events) times a reduction its own way.
  virtual void record_reduction(const ActionMark& mark, Clock::time_point start, Clock::time_point end) {
    (void)mark, (void)start, (void)end;
    throw std::logic_error(std::string(name()) + " timer: data-parallel reductions are not timed on the host");
  }
  // The reductions of step `slot`, as intervals() gives the actions.
  [[nodiscard]] virtual MeasuredIntervals reductions(int slot) {
    (void)slot;
    return {};
  }
  // A collective `rank` ran over its tensor- or context-parallel group from
  // `start` to `end` on this host's clock, inside its compute action begun
  // and not yet ended (timelines::CollectiveSpan); one outside a measured
  // action is not kept.
  virtual void record_collective(schedules::Rank rank, timelines::CollectiveGroup group, std::string_view collective,
                                 std::int64_t bytes, Clock::time_point start, Clock::time_point end) {
    (void)rank, (void)group, (void)collective, (void)bytes, (void)start, (void)end;
    throw std::logic_error(std::string(name()) + " timer: collectives inside actions are not timed on the host");
  }
  // The collectives of step `slot`, every local rank's, in the order made.
  [[nodiscard]] virtual std::vector<timelines::CollectiveSpan> collectives(int slot) {
    (void)slot;
    return {};
  }
  // "host", "cupti" or "events", for the trace and the log.
  [[nodiscard]] virtual const char* name() const = 0;
};

// Brackets one action for the lifetime of the scope: nothing when `timer` is
// null or the action is not measured.
class TimedScope {
 public:
  TimedScope(ActionTimer* timer, const ActionMark& mark)
      : timer_(timer != nullptr && mark.measured() ? timer : nullptr), mark_(mark) {
    if (timer_ != nullptr) timer_->begin(mark_);
  }
  ~TimedScope() {
    if (timer_ == nullptr) return;
    try {
      timer_->end(mark_);
    } catch (...) {  // a destructor must not throw; a missing end shows as a missing interval
    }
  }
  TimedScope(const TimedScope&) = delete;
  TimedScope& operator=(const TimedScope&) = delete;

 private:
  ActionTimer* timer_;
  ActionMark mark_;
};

}  // namespace gpipe::exec
