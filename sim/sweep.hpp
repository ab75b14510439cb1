// What-if sweeps: a grid of plan requests (plan/request_grid.hpp: stages K,
// micro-batches M, schedules and recompute policies for one mini-batch of N
// samples) predicted in parallel under the same conditions. A configuration
// that cannot exist (M > N, K > layers) is kept as a skipped row with the
// reason, so the grid stays whole.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/request_grid.hpp"
#include "profiles/profile.hpp"
#include "sim/scenario.hpp"

namespace gpipe::sim {

struct SweepGrid {
  plan::RequestGrid grid;
  Conditions conditions;  // the link and how it is shared: the same for every row
};

struct SweepRow {
  plan::PlanRequest request;
  std::string skipped;  // why the configuration cannot exist; empty when simulated
  std::vector<int> partition;
  int micro_batch_size = 0;  // the largest micro-batch
  timelines::Metrics metrics;
  std::int64_t peak_activation_bytes = 0;  // the largest over ranks
  std::int64_t static_bytes = 0;           // the largest over ranks
  std::int64_t peak_memory_bytes = 0;      // the largest over ranks of static + activation peak

  [[nodiscard]] bool ok() const { return skipped.empty(); }
};

// Called now and then from one thread with (configurations done, total).
using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;
// Called from one thread with each row, in grid order.
using SweepSink = std::function<void(SweepRow&& row)>;

// Rows in grid order: schedule, V, recompute, K, M (M fastest), on `threads`
// worker threads. Every row is held, about 1 KB at K = 16 (its per-rank
// metrics most of it): for a grid of a million, stream_sweep.
[[nodiscard]] std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& sweep,
                                              int threads, const SweepProgress& progress = {});

// The same rows handed to `sink` in grid order as they are done, on the
// calling thread, which also reports progress. Memory stays a window of rows
// whatever the grid's size, so a million configurations are written out as
// they come rather than held (the workers wait when the sink falls behind).
void stream_sweep(const profiles::Profile& profile, const SweepGrid& sweep, int threads, const SweepSink& sink,
                  const SweepProgress& progress = {});

// One row per configuration with every metric (the columns plots/ reads);
// `fits` is 1/0 against memory_limit, empty without one. The head line and
// one row's line, for a caller that writes rows as they come.
[[nodiscard]] std::string sweep_csv(const std::vector<SweepRow>& rows,
                                    std::optional<std::int64_t> memory_limit);
[[nodiscard]] std::string sweep_csv_head();
[[nodiscard]] std::string sweep_csv_row(const SweepRow& row, std::optional<std::int64_t> memory_limit);
// An array of one object per row; sweep_json_row is one element.
[[nodiscard]] nlohmann::json sweep_json(const std::vector<SweepRow>& rows,
                                        std::optional<std::int64_t> memory_limit);
[[nodiscard]] nlohmann::json sweep_json_row(const SweepRow& row, std::optional<std::int64_t> memory_limit);

// The best configuration (highest throughput) for each K among those that fit.
[[nodiscard]] std::vector<const SweepRow*> best_per_stage_count(
    const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit);

// The same, kept as rows come (stream_sweep): offered in grid order, it keeps
// what best_per_stage_count picks from the whole vector.
class BestPerStageCount {
 public:
  explicit BestPerStageCount(std::optional<std::int64_t> memory_limit) : memory_limit_(memory_limit) {}
  void offer(const SweepRow& row);
  // In order of K.
  [[nodiscard]] std::vector<const SweepRow*> rows() const;

 private:
  std::optional<std::int64_t> memory_limit_;
  std::map<int, SweepRow> best_;  // by K
};

}  // namespace gpipe::sim
