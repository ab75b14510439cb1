#include "schedules/generators/zb_h1.hpp"

#include "schedules/generators/zb_phases.hpp"

namespace gpipe::schedules {

Schedule generate_zb_h1(const ScheduleOptions& options) {
  // 1F1B's K-r warm-up forwards, then r W's put off: K in flight on every rank.
  return zero_bubble_schedule("zb-h1", options, [](int rank, int num_ranks) {
    return PhaseCounts{.warmup = num_ranks - rank, .growing = rank};
  });
}

}  // namespace gpipe::schedules
