// The grid flags `gpipe-sim sweep` and `gpipe-run validate` share: the K and M
// lists, the batch, the schedules and the recompute policies, which make a
// grid of plan requests (plan/request_grid.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan/request_grid.hpp"
#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::tools {

struct GridFlags {
  std::string stages;
  std::string microbatches;
  std::int64_t batch = 0;
  std::string schedules = "gpipe";
  std::string recompute = "never";
  std::string stages_per_rank;  // empty: each family's own V
  // What --schedule may name; a command that predicts more (zb-auto) sets it before add_to.
  std::vector<std::string> known_schedules = schedules::schedule_names();

  // `lists_required`: false where a schedule file may give K and M instead
  // (the caller then checks that one of the two was given).
  // `batch_required`: false where the caller checks it (a sweep of inference has none).
  void add_to(CLI::App& cmd, std::int64_t max_batch, bool lists_required = true, bool batch_required = true);
  // Sets those fields of `grid` (grid.base.batch included); throws InputError
  // naming the flag for a list that does not parse.
  void apply_to(plan::RequestGrid& grid) const;
  // The same for one given schedule (a file's): its name, K and M, with the
  // recompute policies and the batch of the flags.
  void apply_to(plan::RequestGrid& grid, schedules::Schedule given) const;
};

}  // namespace gpipe::tools
