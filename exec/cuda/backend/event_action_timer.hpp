// The event timer: a timing CUDA event recorded on the action's stream before
// and after its work, and one on the rank's compute stream at the step's
// start. Each rank's times are from its own start event: the ranks' events
// live in their own (green) contexts, and the ranks leave one host barrier
// together, so their starts are taken as one moment (within the few
// microseconds between the barrier and each record). Event times are the
// device's (about 0.5 us resolution). An event after a stream wait marks when
// the wait was satisfied, so an action starts when its stream could begin it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "exec/cuda/backend/device_timer.hpp"
#include "exec/cuda/base/stream.hpp"

namespace gpipe::exec::cuda {

class EventActionTimer final : public DeviceTimer {
 public:
  EventActionTimer(int num_ranks, int measured_steps);

  // Records the step's origin on the rank's compute stream.
  void start_step(schedules::Rank rank, int slot, Clock::time_point start) override;
  void begin_on(const ActionMark& mark, StreamHandle stream) override;
  void end_on(const ActionMark& mark, StreamHandle stream) override;
  [[nodiscard]] MeasuredIntervals intervals(int slot) override;
  [[nodiscard]] const char* name() const override { return "events"; }

 private:
  struct Marks {
    schedules::Action action;
    std::unique_ptr<Event> start;
    std::unique_ptr<Event> end;
  };
  struct RankSlot {
    std::unique_ptr<Event> origin;
    std::map<std::size_t, Marks> actions;  // by program index
  };
  [[nodiscard]] RankSlot& at(schedules::Rank rank, int slot);

  std::mutex mutex_;  // guards the map's shape; each rank's thread touches only its own slots
  std::vector<RankSlot> slots_;  // [slot * num_ranks + rank]
};

}  // namespace gpipe::exec::cuda
