// A grid of plan requests: every schedule x recompute policy x K x M for one
// mini-batch, everything else held fixed. `gpipe-sim sweep` predicts each
// request of a grid; `gpipe-run validate` predicts, runs and compares each.
// A request of the grid that cannot exist (M > N, K > layers) stays in the
// output as a skipped row with the reason, so the grid stays whole; every row,
// run or skipped, starts with the same fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/plan.hpp"

namespace gpipe::plan {

struct RequestGrid {
  std::vector<int> stages;
  std::vector<int> microbatches;
  std::vector<std::string> schedules = {"gpipe"};
  std::vector<schedules::RecomputePolicy> recompute = {schedules::RecomputePolicy::never};
  std::vector<int> stages_per_rank = {0};  // V; 0 = each family's own
  // The batch, partition, backward order and optimizer: the same for every request.
  PlanRequest base;

  // The requests in grid order: schedule, V, recompute, K, M (M fastest).
  [[nodiscard]] std::vector<PlanRequest> requests() const;
  // The one at `index` (< size()) in that order, made alone: a sweep of a
  // million requests makes each when it needs it instead of holding them all.
  [[nodiscard]] PlanRequest request(std::int64_t index) const;
  // How many requests there are, counted without making them.
  [[nodiscard]] std::int64_t size() const {
    return static_cast<std::int64_t>(schedules.size()) * static_cast<std::int64_t>(stages_per_rank.size()) *
           static_cast<std::int64_t>(recompute.size()) * static_cast<std::int64_t>(stages.size()) *
           static_cast<std::int64_t>(microbatches.size());
  }
};

// The fields every JSON row of a grid starts with: schedule, recompute,
// stages, stages_per_rank (once known: a skipped row of a family's own V has
// none), microbatches, batch, status ("ok" or "skipped") and, when skipped, its reason.
[[nodiscard]] nlohmann::json grid_row_json(const PlanRequest& request, const std::string& skipped);
// The same for a CSV row whose columns begin schedule,recompute,stages,
// stages_per_rank,microbatches,micro_batch_size,batch,partition,status,reason
// (kGridCsvHead): the first five cells and their commas; for a skipped row (`skipped` non-empty) the whole
// line, `metric_cells` empty cells after the reason and the newline included.
[[nodiscard]] std::string grid_row_csv(const PlanRequest& request, const std::string& skipped,
                                       int metric_cells);
inline constexpr std::string_view kGridCsvHead =
    "schedule,recompute,stages,stages_per_rank,microbatches,micro_batch_size,batch,partition,status,reason";

// One cell of a grid's CSV row: quoted when it holds a comma, a quote or a
// newline, as RFC 4180 and Python's csv module read it. Partitions ("3,3,2")
// and skip reasons need it.
[[nodiscard]] std::string csv_cell(const std::string& text);

// A number with `decimals` decimals, or an empty cell for none (a family with
// no closed-form bubble).
[[nodiscard]] std::string csv_number(std::optional<double> value, int decimals);

}  // namespace gpipe::plan
