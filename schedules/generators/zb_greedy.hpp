// A greedy list scheduler for zero-bubble schedules of one stage per rank:
// the starting point of the zero-bubble paper's automatic schedule (Qi et al.,
// ICLR 2024, section 4; sail-sg/zero-bubble-pipeline-parallelism's
// auto_schedule builds one and keeps the best of a few flag variants). It
// plays the pipeline forward in time on its own simple cost model, and
// whenever a rank's compute stream is free it picks what to run next:
//
//   - an input backward I whose gradient has arrived (I is on the critical
//     path: the previous stage waits for it), or a forward F whose activation
//     has arrived and that the rank may hold (at most max_in_flight[r]
//     micro-batches with their F done and their W not yet);
//   - with neither ready, a weight backward W: at once (eager), or only when
//     it ends before the next input arrives (gaps_only), so as not to delay it;
//   - with nothing to run, it waits for the next input.
//
// Each kind runs in micro-batch order. The result is a valid compute-only
// schedule for any costs and any max_in_flight >= 1: its own timeline is a
// witness that the order runs without deadlock. How good it is depends on
// the policy and on how far the real costs are from the ones given here, so
// sim/zb_auto.hpp tries many policies and judges each by the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/generate.hpp"

namespace gpipe::schedules {

// What the greedy weighs, in ns: per stage, and per boundary s -> s+1 the
// time a message takes (activations one way, gradients the other).
struct ZbGreedyCosts {
  std::vector<std::int64_t> forward_ns;
  std::vector<std::int64_t> input_backward_ns;
  std::vector<std::int64_t> weight_backward_ns;
  std::vector<std::int64_t> transfer_ns;  // K-1 of them
};

// Which of an I and an F, both ready, runs first.
enum class ReadyFirst { input_backward, forward };
// When a W may fill time that nothing else is ready for.
enum class WeightFill { eager, gaps_only };

struct ZbGreedyPolicy {
  std::vector<int> max_in_flight;  // per rank, each at least 1
  ReadyFirst ready_first = ReadyFirst::input_backward;
  WeightFill weight_fill = WeightFill::eager;
};

// "in flight 4,4,3,3, I first, W eager": for reports of which policy won.
[[nodiscard]] std::string to_string(const ZbGreedyPolicy& policy);

// The schedule, named "zb-greedy", with the options' K, M and recompute
// policy. Throws InputError for K < 1, M < 1, V != 1, and for costs or caps
// that do not match K (a negative time, a cap below 1).
[[nodiscard]] Schedule greedy_zero_bubble(const ScheduleOptions& options, const ZbGreedyCosts& costs,
                                          const ZbGreedyPolicy& policy);

}  // namespace gpipe::schedules
