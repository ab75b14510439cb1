#include "sim/step_bounds.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "profiles/limits.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;

// The total that decides, and that the message prints: every (stage,
// micro-batch) in turn, in this order, so that its rounding is always the same.
double step_total_ns(const schedules::Schedule& schedule, const ProfileCosts& costs, double latency_us,
                     double bandwidth_GBps) {
  const double bytes_per_ns = bandwidth_GBps;  // GB/s = bytes/ns
  double total_ns = 0;
  for (int s = 0; s < schedule.num_stages; ++s) {
    const schedules::Stage stage{s};
    for (int m = 0; m < schedule.num_microbatches; ++m) {
      const schedules::Microbatch mb{m};
      // F, R (= F) and B, or I and W: an upper bound of what the step runs.
      total_ns += 2.0 * static_cast<double>(costs.duration_ns({stage, ActionKind::F, mb}));
      total_ns += static_cast<double>(costs.duration_ns({stage, ActionKind::B, mb}));
      total_ns += static_cast<double>(costs.duration_ns({stage, ActionKind::I, mb}));
      total_ns += static_cast<double>(costs.duration_ns({stage, ActionKind::W, mb}));
      if (s + 1 < schedule.num_stages) {
        total_ns += 2.0 * (latency_us * 1e3 + static_cast<double>(costs.boundary_bytes(stage, mb)) / bytes_per_ns);
      }
    }
    total_ns += static_cast<double>(costs.duration_ns({stage, ActionKind::STEP, schedules::Microbatch{0}}));
  }
  return total_ns;
}

// The same sum of magnitudes, taken per micro-batch size (a plan has at most
// two) instead of per micro-batch: O(stages), where step_total_ns is
// O(stages x M) and cost a sweep a sixth of its time. NaN or infinity when a
// term is, and infinity when the costs do not cover the schedule (the exact
// sum then throws what it always has).
double step_bound_ns(const schedules::Schedule& schedule, const ProfileCosts& costs, double latency_us,
                     double bandwidth_GBps) {
  const std::vector<int>& sizes = costs.microbatch_sizes();
  if (schedule.num_microbatches > static_cast<int>(sizes.size()) || schedule.num_stages < 0 ||
      static_cast<std::size_t>(schedule.num_stages) > costs.num_stages()) {
    return INFINITY;
  }
  std::vector<std::pair<int, double>> counts;  // (size, micro-batches of that size)
  for (int m = 0; m < schedule.num_microbatches; ++m) {
    const int b = sizes[static_cast<std::size_t>(m)];
    auto it = counts.begin();
    while (it != counts.end() && it->first != b) ++it;
    if (it == counts.end()) {
      counts.emplace_back(b, 1.0);
    } else {
      it->second += 1.0;
    }
  }
  const auto ns = [](std::int64_t t) { return std::fabs(static_cast<double>(t)); };
  double bound = 0;
  for (const auto& [b, count] : counts) {
    const std::vector<profiles::StageCost>& stages = costs.at_size(b);
    for (int s = 0; s < schedule.num_stages; ++s) {
      const profiles::StageCost& c = stages[static_cast<std::size_t>(s)];
      double per_microbatch = 2.0 * ns(c.fwd_ns) + ns(c.bwd_ns) + ns(c.bwd_input_ns) + ns(c.bwd_weight_ns);
      if (s + 1 < schedule.num_stages) {
        per_microbatch +=
            2.0 * std::fabs(latency_us * 1e3 + static_cast<double>(c.output_bytes) / bandwidth_GBps);
      }
      bound += count * per_microbatch;
    }
  }
  for (int s = 0; s < schedule.num_stages; ++s) {
    bound += ns(costs.stage(schedules::Stage{s}, schedules::Microbatch{0}).optimizer_ns);
  }
  return bound;
}

}  // namespace

void check_step_fits(const schedules::Schedule& schedule, const ProfileCosts& costs, double latency_us,
                     double bandwidth_GBps) {
  // The exact total differs from the bound by rounding alone (a relative
  // 1e-7 even over 10^9 terms), so far below the limit it passes too: only a
  // step near the limit, or with a NaN or infinite term, adds up every action.
  if (step_bound_ns(schedule, costs, latency_us, bandwidth_GBps) <= profiles::kMaxStepNs / 2) return;
  const double total_ns = step_total_ns(schedule, costs, latency_us, bandwidth_GBps);
  if (!(total_ns <= profiles::kMaxStepNs)) {
    throw InputError(fmt::format("this step's compute and transfers add up to {:.3g} s, past the {:.3g} s (146 "
                                 "years) the simulator's integer ns hold",
                                 total_ns / 1e9, profiles::kMaxStepNs / 1e9));
  }
}

}  // namespace gpipe::sim
