// One measured step of the CUDA executor as a Timeline: the GPU intervals that
// the timer measured (CUPTI or events), completed by the rules below, and the
// rank's memory samples placed on the GPU's clock. Pure host code, tested in
// CI without a GPU.
//
// Which actions have no GPU interval of their own, and what they get:
// - a SEND: the one device-to-device copy moves the message, and it runs under
//   the RECV (the receiver enqueues it), so the SEND takes its RECV's
//   interval, as the simulator gives both ends of a message one interval;
// - an action that launched nothing (the STEP of a stage without parameters):
//   an empty interval where the previous action on its rank and stream ended
//   (0 for the first).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/timeline.hpp"

namespace gpipe::exec::cuda {

struct GpuInterval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool operator==(const GpuInterval&) const = default;
};

// (rank, action) -> measured interval, in ns from the step's origin.
using MeasuredIntervals = std::map<std::pair<int, schedules::Action>, GpuInterval>;

// Every action of `lowered`, in each rank's program order, on the stream its
// kind runs on. Throws RunError naming the action when a RECV has no measured
// interval (its copy was not seen) or a SEND has no RECV to take one from.
[[nodiscard]] std::vector<schedules::TimedAction> complete_step_actions(
    const schedules::Schedule& lowered, const MeasuredIntervals& measured);

// A change of a rank's activation bytes, made while the rank's worker was
// enqueueing action `action_index` of its program (-1: between actions).
struct ActionMemorySample {
  int rank = 0;
  int action_index = -1;
  std::int64_t activation_bytes = 0;
};

// On the GPU's clock: a sample that raises the bytes is placed at the start of
// its action (a stash fills as the forward runs), one that lowers them at its
// end (a backward frees the stash when it is done); between actions, at the
// end of the previous action. `samples` are one rank's, in the order made.
[[nodiscard]] std::vector<schedules::MemorySample> place_memory_samples(
    const std::vector<ActionMemorySample>& samples, const schedules::Schedule& lowered,
    const std::vector<schedules::TimedAction>& actions);

}  // namespace gpipe::exec::cuda
