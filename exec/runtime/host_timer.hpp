// The action timer of backends that compute on the rank's own thread (the
// CPU): an action's interval is when the thread began and ended it on the
// host's steady clock, in ns from the step's start, which every rank of the
// process shares (the step barrier's release). Each action starts strictly
// after the one before it on its rank (a nanosecond is added on a tie of the
// clock), so that sorting a trace by start gives back the program order.
//
// Each rank's thread touches only its own record until intervals() is read
// after the threads have stopped, so there is no lock on the hot path.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "exec/runtime/action_timer.hpp"

namespace gpipe::exec {

class HostTimer final : public ActionTimer {
 public:
  HostTimer(int num_ranks, int measured_steps);

  void start_step(schedules::Rank rank, int slot, Clock::time_point start) override;
  void begin(const ActionMark& mark) override;
  void end(const ActionMark& mark) override;
  [[nodiscard]] MeasuredIntervals intervals(int slot) override;
  void record_reduction(const ActionMark& mark, Clock::time_point start, Clock::time_point end) override;
  [[nodiscard]] MeasuredIntervals reductions(int slot) override;
  void record_collective(schedules::Rank rank, timelines::CollectiveGroup group, std::string_view collective,
                         std::int64_t bytes, Clock::time_point start, Clock::time_point end) override;
  [[nodiscard]] std::vector<timelines::CollectiveSpan> collectives(int slot) override;
  [[nodiscard]] const char* name() const override { return "host"; }

 private:
  struct RankRecord {
    Clock::time_point origin;
    std::int64_t previous_start = -1;
    std::int64_t open_start = 0;  // of the action begun and not yet ended
    schedules::Action open_action;
    int open_slot = -1;  // -1: no action open
    using Slots = std::vector<std::vector<std::pair<schedules::Action, Interval>>>;
    Slots steps;       // per slot
    Slots reductions;  // per slot
    std::vector<std::vector<timelines::CollectiveSpan>> collectives;  // per slot
  };
  using Records = RankRecord::Slots;
  // Every rank's `which` of step `slot`, by (rank, action).
  [[nodiscard]] MeasuredIntervals collect(Records RankRecord::*which, int slot) const;
  [[nodiscard]] RankRecord& record(schedules::Rank rank);

  std::vector<RankRecord> ranks_;
};

}  // namespace gpipe::exec
