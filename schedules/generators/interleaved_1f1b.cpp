// Interleaved 1F1B (Megatron-LM, Narayanan et al. 2021), as torch's
// Interleaved1F1B: K ranks, V stages each (stage s on rank s mod K). Rank r
// warms up with (V-1) rounds of forwards plus 2 per hop to the last rank,
// then alternates one forward and one backward, depth first (a micro-batch
// round goes through a rank's next stage before new micro-batches enter).
//
// K=2, M=4, V=2 (stages 0 and 2 on rank 0, 1 and 3 on rank 1):
//
//   rank 0: 0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3
//   rank 1: 1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3
#include "schedules/generators/interleaved_steps.hpp"
#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"

namespace gpipe::schedules {

Schedule generate_interleaved_1f1b(const ScheduleOptions& o) {
  constexpr std::string_view name = "interleaved-1f1b";
  const int V = stages_per_rank(name, o, kSeveralStagesPerRank);
  Schedule s = empty_schedule(name, o, looped_placement(o.num_ranks, V));
  const InterleavedShape shape = interleaved_shape(name, o.num_ranks, V, o.num_microbatches);
  for (int r = 0; r < o.num_ranks; ++r) {
    s.ranks[static_cast<std::size_t>(r)] =
        interleaved_rank_order(shape, r, interleaved_warmup(shape, r, 2), BackwardSplit{});
  }
  return s;
}

}  // namespace gpipe::schedules
