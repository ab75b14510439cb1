// What-if sweeps: a grid of plan requests (plan/grid.hpp: stages K,
// micro-batches M, schedules and recompute policies for one mini-batch of N
// samples) predicted in parallel under the same conditions. A configuration
// that cannot exist (M > N, K > layers) is kept as a skipped row with the
// reason, so the grid stays whole.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/grid.hpp"
#include "profiles/profile.hpp"
#include "sim/scenario.hpp"

namespace gpipe::sim {

struct SweepGrid {
  plan::Grid grid;
  Conditions conditions;  // the link and how it is shared: the same for every row
};

struct SweepRow {
  plan::PlanRequest request;
  std::string skipped;  // why the configuration cannot exist; empty when simulated
  std::vector<int> partition;
  int micro_batch_size = 0;  // the largest micro-batch
  schedules::Metrics metrics;
  std::int64_t peak_activation_bytes = 0;  // the largest over ranks
  std::int64_t static_bytes = 0;           // the largest over ranks
  std::int64_t peak_memory_bytes = 0;      // the largest over ranks of static + activation peak

  [[nodiscard]] bool ok() const { return skipped.empty(); }
};

// Called now and then from one thread with (configurations done, total).
using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// Rows in grid order: schedule, recompute, K, M (M fastest).
[[nodiscard]] std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& sweep,
                                              int threads, const SweepProgress& progress = {});

// One row per configuration with every metric (the columns plots/ reads);
// `fits` is 1/0 against memory_limit, empty without one.
[[nodiscard]] std::string sweep_csv(const std::vector<SweepRow>& rows,
                                    std::optional<std::int64_t> memory_limit);
[[nodiscard]] nlohmann::json sweep_json(const std::vector<SweepRow>& rows,
                                        std::optional<std::int64_t> memory_limit);

// The best configuration (highest throughput) for each K among those that fit.
[[nodiscard]] std::vector<const SweepRow*> best_per_stage_count(
    const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit);

}  // namespace gpipe::sim
