// Whether a step can be simulated in integer ns: its compute and transfers,
// added up in floating point before any of them is, must stay under
// profiles::kMaxStepNs (146 years). Past it, the engine's sums would wrap
// and print a wrong answer; this says so instead.
#pragma once

#include "schedules/schedule.hpp"
#include "sim/profile_costs.hpp"

namespace gpipe::sim {

// Throws InputError naming the total when every compute action of
// `schedule` (F, B, I, W, R, STEP) and every message between stages, at
// latency_us + bytes / bandwidth_GBps each, add up past the bound.
void check_step_fits(const schedules::Schedule& schedule, const ProfileCosts& costs, double latency_us,
                     double bandwidth_GBps);

}  // namespace gpipe::sim
