#include "tools/common/grid_flags.hpp"

#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/name_list.hpp"

namespace gpipe::tools {

void GridFlags::add_to(CLI::App& cmd, std::int64_t max_batch, bool lists_required, bool batch_required) {
  cmd.add_option("--stages,-K", stages, "Stage counts: 1,2,4 or a range 1..8")->required(lists_required);
  cmd.add_option("--microbatches,-M", microbatches, "Micro-batch counts: 1,2,4 or a range 1..64")
      ->required(lists_required);
  cmd.add_option("--batch,-N", batch, "Samples per mini-batch N")
      ->required(batch_required)
      ->check(CLI::Range(std::int64_t{1}, max_batch));
  cmd.add_option("--schedule", schedules,
                 fmt::format("Schedules, comma-separated: {}", fmt::join(known_schedules, ",")))
      ->capture_default_str();
  cmd.add_option("--stages-per-rank,-V", stages_per_rank,
                 "Stages per rank V of the interleaved and V-shaped schedules: 2,4 or a range 2..4 "
                 "(default: each schedule's own)");
  cmd.add_option("--recompute", recompute,
                 fmt::format("Recompute policies, comma-separated: {}",
                             fmt::join(schedules::recompute_policy_names(), ",")))
      ->capture_default_str();
}

namespace {

std::vector<schedules::RecomputePolicy> parse_policies(const std::string& list) {
  std::vector<schedules::RecomputePolicy> policies;
  for (const auto& name : parse_name_list(list, "--recompute", schedules::recompute_policy_names(),
                                             schedules::accepted_recompute_policy_names())) {
    policies.push_back(*schedules::parse_recompute_policy(name));
  }
  return policies;
}

}  // namespace

void GridFlags::apply_to(plan::RequestGrid& grid) const {
  grid.stages = parse_int_list(stages, "--stages");
  grid.microbatches = parse_int_list(microbatches, "--microbatches");
  grid.schedules = parse_name_list(schedules, "--schedule", known_schedules);
  if (!stages_per_rank.empty()) grid.stages_per_rank = parse_int_list(stages_per_rank, "--stages-per-rank");
  grid.recompute = parse_policies(recompute);
  grid.base.batch = batch;
}

void GridFlags::apply_to(plan::RequestGrid& grid, schedules::Schedule given) const {
  grid.recompute = parse_policies(recompute);
  grid.base.batch = batch;
  grid.base = plan::for_schedule(std::move(grid.base), std::move(given));
  // The file's K, V, M and name, for the one request of each policy.
  grid.stages = {grid.base.stages};
  grid.stages_per_rank = {grid.base.stages_per_rank};
  grid.microbatches = {grid.base.microbatches};
  grid.schedules = {grid.base.schedule};
}

}  // namespace gpipe::tools
