// The grid flags `gpipe-sim sweep` and `gpipe-run validate` share: the K and M
// lists, the batch, the schedules and the recompute policies, which make a
// grid of plan requests (plan/grid.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/grid.hpp"
#include "schedules/generate.hpp"

namespace gpipe::cli {

struct GridFlags {
  std::string stages;
  std::string microbatches;
  std::int64_t batch = 0;
  std::string schedules = "gpipe";
  std::string recompute = "never";
  std::string stages_per_rank;  // empty: each family's own V
  // What --schedule may name; a command that predicts more (zb-auto) sets it before add_to.
  std::vector<std::string> known_schedules = schedules::schedule_names();

  void add_to(CLI::App& cmd, std::int64_t max_batch);
  // Sets those fields of `grid` (grid.base.batch included); throws InputError
  // naming the flag for a list that does not parse.
  void apply_to(plan::Grid& grid) const;
};

}  // namespace gpipe::cli
