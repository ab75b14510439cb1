// Interleaved zero bubble, as torch's InterleavedZeroBubble (the ZB1P
// schedule of Qi et al. 2024): interleaved 1F1B's walk with the backward split
// into I (input gradient, on the critical path) and W (weight gradient, which
// nothing waits for). Rank r warms up with one forward per hop instead of two
// and runs each W r backwards after its I, so W fills the slots where rank r
// would otherwise wait; the Ws left over drain at the end.
//
// K=2, M=4, V=2:
//
//   rank 0: 0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 2F3
//           2I2 2W2 2I3 2W3 0I2 0W2 0I3 0W3
//   rank 1: 1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 1W1
//           3F3 3I3 3W2 1I2 3W3 1I3 1W2 1W3
#include "schedules/generators/interleaved_steps.hpp"
#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"

namespace gpipe::schedules {

Schedule generate_interleaved_zb(const ScheduleOptions& o) {
  constexpr std::string_view name = "interleaved-zb";
  const int V = stages_per_rank(name, o, kSeveralStagesPerRank);
  Schedule s = empty_schedule(name, o, looped_placement(o.num_ranks, V));
  const InterleavedShape shape = interleaved_shape(name, o.num_ranks, V, o.num_microbatches);
  for (int r = 0; r < o.num_ranks; ++r) {
    s.ranks[static_cast<std::size_t>(r)] = interleaved_rank_order(
        shape, r, interleaved_warmup(shape, r, 1), BackwardSplit{.split = true, .weight_lag = r});
  }
  return s;
}

}  // namespace gpipe::schedules
