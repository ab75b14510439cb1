// Breadth-first pipelining (Lamy-Poirier 2022), as torch's LoopedBFS: K
// ranks, V stages each (stage s on rank s mod K). A rank runs every
// micro-batch through its first stage, then through its next; backwards go
// the other way, last stage first, last micro-batch first. GPipe's fill and
// drain, looped V times through the ranks.
//
// K=2, M=3, V=2:
//
//   rank 0: 0F0 0F1 0F2 2F0 2F1 2F2 2B2 2B1 2B0 0B2 0B1 0B0
//   rank 1: 1F0 1F1 1F2 3F0 3F1 3F2 3B2 3B1 3B0 1B2 1B1 1B0
#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"

namespace gpipe::schedules {

Schedule generate_looped_bfs(const ScheduleOptions& o) {
  constexpr std::string_view name = "looped-bfs";
  const int V = stages_per_rank(name, o, kSeveralStagesPerRank);
  Schedule s = empty_schedule(name, o, looped_placement(o.num_ranks, V));
  const int K = o.num_ranks;
  const int M = o.num_microbatches;
  for (int r = 0; r < K; ++r) {
    auto& list = s.ranks[static_cast<std::size_t>(r)];
    list.reserve(2 * static_cast<std::size_t>(V) * static_cast<std::size_t>(M));
    for (int local = 0; local < V; ++local) {
      for (int m = 0; m < M; ++m) list.push_back(make_action(local * K + r, ActionKind::F, m));
    }
    for (int local = V - 1; local >= 0; --local) {
      for (int m = M - 1; m >= 0; --m) list.push_back(make_action(local * K + r, ActionKind::B, m));
    }
  }
  return s;
}

}  // namespace gpipe::schedules
