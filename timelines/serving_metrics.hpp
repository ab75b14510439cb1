// What an inference run is scored by (docs/design.md, "Inference"), from its items'
// times and its ranks' totals, predicted or measured alike: step time (first
// arrival to last completion), throughput, the steady state's throughput,
// latency percentiles, per rank utilisation and memory, the bottleneck stage,
// and the closed forms of equal stages on free links beside them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelines/serving_run.hpp"

namespace gpipe::timelines {

// Nearest-rank percentiles (base/percentile.hpp) of the items' latencies.
struct Latency {
  double first_us = 0;  // item 0's
  double mean_us = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0;
  double max_us = 0;

  bool operator==(const Latency&) const = default;
};

// For K equal stages of forward time t on free links, with B in flight:
// the first item's latency K t, a batch of B items (B + K - 1) t, and the
// steady state min(B, K) / (K t) items per unit time. t is the slowest
// stage's mean forward, so they are the simulation's exactly when the
// stages are equal and the links free.
struct ClosedForms {
  double stage_time_us = 0;
  double first_latency_us = 0;
  double batch_time_us = 0;
  double steady_throughput_items_per_s = 0;

  bool operator==(const ClosedForms&) const = default;
};

struct RankLoad {
  int rank = 0;
  double busy_us = 0;
  double utilization = 0;                  // busy / step time
  double forward_us = 0;                   // mean forward of an item on its stage
  std::int64_t peak_activation_bytes = 0;  // inputs, outputs and state (replay.hpp)
  std::int64_t state_bytes = 0;
  std::int64_t static_bytes = 0;           // weights

  bool operator==(const RankLoad&) const = default;
};

struct ServingMetrics {
  int requests = 0;
  int in_flight = 0;
  int micro_batch_size = 0;
  std::int64_t step_time_ns = 0;
  double step_time_us = 0;
  double throughput_items_per_s = 0;
  double throughput_samples_per_s = 0;
  // Over the items after the first B and before the last B: (R - 2B) items
  // between the completions of items B - 1 and R - B - 1. None when R <= 2B.
  std::optional<double> steady_throughput_items_per_s;
  Latency latency;
  int bottleneck_stage = 0;  // the busiest; the first of equals
  ClosedForms closed_form;
  std::vector<RankLoad> ranks;

  bool operator==(const ServingMetrics&) const = default;
};

// `static_bytes` per rank, or empty (0). Throws std::invalid_argument for a
// run without items.
[[nodiscard]] ServingMetrics compute_serving_metrics(const ServingRun& run, int in_flight, int micro_batch_size,
                                      std::span<const std::int64_t> static_bytes);

// Keys: requests, in_flight, micro_batch_size, step_time_us,
// throughput_items_per_s, throughput_samples_per_s,
// steady_throughput_items_per_s (null for none), latency_us {first, mean,
// p50, p90, p99, max}, bottleneck_stage, closed_form {stage_time_us,
// first_latency_us, batch_time_us, steady_throughput_items_per_s}, ranks
// [{rank, busy_us, utilization, forward_us, peak_activation_bytes,
// state_bytes, static_bytes}].
[[nodiscard]] nlohmann::json to_json(const ServingMetrics& metrics);

}  // namespace gpipe::timelines
