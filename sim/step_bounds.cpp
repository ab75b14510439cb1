#include "sim/step_bounds.hpp"

#include <fmt/format.h>

#include "profiles/limits.hpp"
#include "schedules/error.hpp"

namespace gpipe::sim {

void check_step_fits(const schedules::Schedule& schedule, const CostModel& costs, double latency_us,
                     double bandwidth_GBps) {
  using schedules::ActionKind;
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
  if (!(total_ns <= profiles::kMaxStepNs)) {
    throw InputError(fmt::format("this step's compute and transfers add up to {:.3g} s, past the {:.3g} s (146 "
                                 "years) the simulator's integer ns hold",
                                 total_ns / 1e9, profiles::kMaxStepNs / 1e9));
  }
}

}  // namespace gpipe::sim
