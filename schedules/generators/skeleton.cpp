#include "schedules/generators/skeleton.hpp"

#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::schedules {

int stages_per_rank(std::string_view name, const ScheduleOptions& o, const StagesPerRankRule& rule) {
  const int v = o.stages_per_rank;
  if (v == 0) return rule.family_default;
  if (v < 0) throw InputError(fmt::format("--stages-per-rank must be at least 1, got {}", v));
  if (v < rule.min || v > rule.max) {
    const std::string takes = rule.min == rule.max ? fmt::format("exactly {}", rule.min)
                                                   : fmt::format("{} or more", rule.min);
    throw InputError(fmt::format("--stages-per-rank {} does not fit --schedule {}: it takes {} ({})", v,
                                 name, takes, rule.shape));
  }
  return v;
}

Schedule empty_schedule(std::string_view name, const ScheduleOptions& o, std::vector<Rank> stage_to_rank) {
  if (o.num_ranks < 1) throw InputError(fmt::format("--stages must be at least 1, got {}", o.num_ranks));
  if (o.num_microbatches < 1) {
    throw InputError(fmt::format("--microbatches must be at least 1, got {}", o.num_microbatches));
  }
  Schedule s;
  s.name = std::string(name);
  s.num_ranks = o.num_ranks;
  s.num_stages = static_cast<int>(stage_to_rank.size());
  s.num_microbatches = o.num_microbatches;
  s.stage_to_rank = std::move(stage_to_rank);
  s.recompute = o.recompute;
  s.ranks.resize(static_cast<std::size_t>(o.num_ranks));
  return s;
}

std::vector<Rank> looped_placement(int num_ranks, int stages_per_rank) {
  std::vector<Rank> placement;
  for (int s = 0; s < num_ranks * stages_per_rank; ++s) placement.emplace_back(s % num_ranks);
  return placement;
}

std::vector<Rank> v_placement(int num_ranks) {
  std::vector<Rank> placement;
  for (int s = 0; s < 2 * num_ranks; ++s) placement.emplace_back(s < num_ranks ? s : 2 * num_ranks - 1 - s);
  return placement;
}

}  // namespace gpipe::schedules
