// The numbers a Timeline is scored by (docs/design.md, "Simulation semantics"):
// step time, bubble fraction (measured and the closed form), Megatron's
// bubble-over-ideal convention, throughput, and per rank busy time,
// utilisation and memory. The simulator and the executor print the same keys.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/analytic_bubble.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::timelines {

struct RankMetrics {
  int rank = 0;
  std::int64_t busy_ns = 0;  // sum of the rank's compute-stream action durations
  double busy_us = 0.0;
  double utilization = 0.0;                // busy / makespan
  std::int64_t peak_activation_bytes = 0;  // max of the rank's memory samples, 0 if none
  std::int64_t static_bytes = 0;           // params + grads + optimizer state, 0 if unknown

  bool operator==(const RankMetrics&) const = default;
};

struct Metrics {
  std::int64_t step_time_ns = 0;  // makespan: latest end minus earliest start
  double step_time_us = 0.0;
  double bubble_fraction = 0.0;           // 1 - sum(busy) / (num_ranks * makespan)
  // The family's closed form (analytic_bubble.hpp): (K-1)/(M+K-1) for GPipe
  // and 1F1B; none for a family that has no exact one.
  std::optional<double> bubble_fraction_analytic;
  double bubble_time_over_ideal = 0.0;    // Megatron's convention: sum(makespan-busy)/sum(busy)
  std::optional<double> bubble_time_over_ideal_analytic;  // (K-1)/M for GPipe
  double throughput_samples_per_s = 0.0;         // batch_size / step time (0 if batch_size unknown)
  std::vector<RankMetrics> ranks;

  bool operator==(const Metrics&) const = default;
};

// Throws InputError naming the action when an action's rank lies outside
// [0, num_ranks), and when static_bytes is neither empty nor one per rank.
// Ratios whose denominator is zero (an empty timeline, M = 0) are 0.
[[nodiscard]] Metrics compute_metrics(const Timeline& timeline);

// The same metrics from totals a caller kept itself (the simulator does, when it
// records no timeline): makespan, compute busy time and activation peak per
// rank, and the mean compute times the zero-bubble closed forms need.
[[nodiscard]] Metrics metrics_from_totals(const TimelineInfo& info, std::int64_t step_time_ns,
                                          std::span<const std::int64_t> busy_ns,
                                          std::span<const std::int64_t> peak_activation_bytes,
                                          const schedules::MeanComputeTimes& times = {});

// Sums and counts of the F, B, I and W durations of a schedule's compute
// actions, for the mean times of the closed forms: T_F, the mean backward of a
// micro-batch on a stage (one B, or an I and its W) and T_W.
class ComputeTimeTotals {
 public:
  // Inline: the simulator adds every action of every configuration of a sweep.
  void add(schedules::ActionKind kind, std::int64_t duration_ns) {
    const int slot = kind == schedules::ActionKind::F ? 0 : kind == schedules::ActionKind::B ? 1 : kind == schedules::ActionKind::I ? 2
                   : kind == schedules::ActionKind::W ? 3 : -1;
    if (slot < 0) return;
    sum_[slot] += duration_ns;
    ++count_[slot];
  }
  [[nodiscard]] schedules::MeanComputeTimes means() const;

 private:
  std::int64_t sum_[4] = {};
  std::int64_t count_[4] = {};
};

// The docs/design.md keys: step_time_us, bubble_fraction, bubble_fraction_analytic,
// bubble_time_over_ideal, bubble_time_over_ideal_analytic (null where the family
// has no closed form), throughput_samples_per_s, and "ranks": [{rank, busy_us,
// utilization, peak_activation_bytes, static_bytes}].
[[nodiscard]] nlohmann::json to_json(const Metrics& metrics);
// The inverse of to_json (ns fields come back as llround(us * 1000)); throws
// InputError naming the field that is missing or of the wrong type.
[[nodiscard]] Metrics metrics_from_json(const nlohmann::json& json);

}  // namespace gpipe::timelines
