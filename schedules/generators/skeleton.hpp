// What every generator starts from: the options checked (K, M and V, each
// refusal an InputError naming its flag) and an empty schedule with the
// stage -> rank placement of its family.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// The --stages-per-rank a family takes: V in [min, max]; `family_default`
// when the options leave it 0. `shape` says why, for the error message.
struct StagesPerRankRule {
  int family_default = 1;
  int min = 1;
  int max = 1;
  std::string_view shape;  // e.g. "one stage per rank"
};

inline constexpr StagesPerRankRule kOneStagePerRank{1, 1, 1, "one stage per rank"};
inline constexpr StagesPerRankRule kSeveralStagesPerRank{2, 2, std::numeric_limits<int>::max(),
                                                         "several stages per rank, stage s on rank s mod K"};
inline constexpr StagesPerRankRule kTwoStagesInAV{2, 2, 2, "two stages per rank in a V"};

// V for `name` under `rule`; throws InputError naming --stages-per-rank when
// the options give one the family cannot take.
[[nodiscard]] int stages_per_rank(std::string_view name, const ScheduleOptions& options,
                                  const StagesPerRankRule& rule);

// K ranks, len(stage_to_rank) stages, M micro-batches, no actions yet; throws
// InputError naming --stages or --microbatches when K < 1 or M < 1.
[[nodiscard]] Schedule empty_schedule(std::string_view name, const ScheduleOptions& options,
                                      std::vector<Rank> stage_to_rank);

// Stage s on rank s mod K: the looped placement of the interleaved families
// (rank r holds stages r, r+K, r+2K, ...).
[[nodiscard]] std::vector<Rank> looped_placement(int num_ranks, int stages_per_rank);

// Two stages per rank in a V: rank r holds stages r and 2K-1-r, so the
// middle two stages (K-1, K) share the last rank and the loss sits on rank 0.
[[nodiscard]] std::vector<Rank> v_placement(int num_ranks);

}  // namespace gpipe::schedules
