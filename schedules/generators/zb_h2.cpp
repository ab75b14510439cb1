#include "schedules/generators/zb_h2.hpp"

#include "schedules/generators/zb_phases.hpp"

namespace gpipe::schedules {

Schedule generate_zb_h2(const ScheduleOptions& options) {
  // Rank r's first gradient arrives after its own forward, K-1-r more below it
  // and K-1-r input backwards back up: 2(K-r)-1 forwards' worth of time when
  // T_F = T_I. Then 2r W's put off: 2K-1 in flight on every rank.
  return zero_bubble_schedule("zb-h2", options, [](int rank, int num_ranks) {
    return PhaseCounts{.warmup = 2 * (num_ranks - rank) - 1, .growing = 2 * rank};
  });
}

}  // namespace gpipe::schedules
