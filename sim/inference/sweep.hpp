// An inference sweep (`gpipe-sim sweep --workload inference`): the grid of
// stages K x items in flight B x micro-batch sizes b for one workload, each
// predicted (predict.hpp), and the best throughput per K within a p99 latency
// limit and a memory limit. Rows are CSV with a fixed head, for the
// throughput-against-latency plot (plots/inference_tradeoff.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiles/profile.hpp"
#include "sim/inference/predict.hpp"

namespace gpipe::sim::inference {

struct SweepGrid {
  std::vector<int> stages;
  std::vector<int> in_flight;
  std::vector<int> micro_batch_sizes;
  Scenario base;  // the workload's R and arrivals, the partition and the conditions
};

struct SweepRow {
  int stages = 0;
  int in_flight = 0;
  int micro_batch_size = 0;
  std::string skipped;  // why the configuration cannot exist; empty when it ran
  timelines::ServingMetrics metrics;
  std::int64_t peak_memory_bytes = 0;  // the largest rank's peak activations, state and weights
  std::string partition;

  [[nodiscard]] bool ok() const { return skipped.empty(); }
};

// Every configuration, K outermost, then B, then b.
[[nodiscard]] std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& grid);

// The row of the best throughput (samples/s) of each K whose p99 latency is
// at most `latency_limit_us` and whose memory fits `memory_limit`, K ascending.
[[nodiscard]] std::vector<const SweepRow*> best_per_stage_count(const std::vector<SweepRow>& rows,
                                                                std::optional<double> latency_limit_us,
                                                                std::optional<std::int64_t> memory_limit);

[[nodiscard]] std::string sweep_csv_head();
[[nodiscard]] std::string sweep_csv_row(const SweepRow& row, std::optional<double> latency_limit_us,
                                        std::optional<std::int64_t> memory_limit);

}  // namespace gpipe::sim::inference
