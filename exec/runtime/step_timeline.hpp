// One measured step as a Timeline: the intervals a timer measured, completed
// into every action of the lowered schedule, and each rank's memory changes
// placed on the same clock. Pure host code, the same for every backend.
//
// Which actions may have no interval of their own, and what they get:
// - a SEND whose bytes move under its RECV (one device-to-device copy on one
//   GPU, which the receiver enqueues): its RECV's interval, as the simulator
//   gives both ends of a message one interval;
// - an action that launched no device work (the STEP of a stage without
//   parameters): an empty interval where the previous action on its rank and
//   stream ended (0 for the first).
// A RECV must have been measured.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/runtime/action_timer.hpp"
#include "exec/runtime/memory_log.hpp"
#include "schedules/schedule.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

// Every action of `lowered`, in each rank's program order, on the stream its
// kind runs on, then each measured data-parallel reduction (`reductions`) on
// its rank's reduce stream. Throws RunError naming the action when a RECV has
// no measured interval or an unmeasured SEND has no RECV to take one from.
[[nodiscard]] std::vector<timelines::TimedAction> complete_step_actions(
    const schedules::Schedule& lowered, const MeasuredIntervals& measured,
    const MeasuredIntervals& reductions = {});

// Where a rank's memory changes land on the measured timeline.
enum class MemoryPlacement : std::uint8_t {
  // At their host time: the host ran the actions, so it saw the bytes change.
  host_time,
  // At the bounds of their action's measured interval: a rise at its start (a
  // stash fills as the forward runs), a fall at its end (a backward frees the
  // stash when it is done); between actions, at the end of the one before. For
  // a device that runs an action after the host has enqueued it.
  action_bounds,
};

// The changes of `rank` in one step (in the order made) as samples of the
// timeline whose actions are `actions` (complete_step_actions), in time order.
[[nodiscard]] std::vector<timelines::MemorySample> place_memory_changes(
    schedules::Rank rank, const std::vector<MemoryChange>& changes, MemoryPlacement placement,
    const schedules::Schedule& lowered, const std::vector<timelines::TimedAction>& actions);

}  // namespace gpipe::exec
