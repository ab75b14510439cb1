// Ranks that compute at once share the machine: the cores' memory bandwidth
// and last-level cache on a CPU, the L2 and HBM on a GPU split into SM
// partitions. An action runs slower the more other ranks compute beside it
// (on this project's 2-core machine a K = 2 pipeline's forwards took 2.9 %
// longer than the profile measured them alone; on an H200, rank 0's forward
// took 6,400 us alone and about 6,540 us beside three partitions).
//
// A profile that measured it says how much (profiles::Profile::contention:
// the slowdown at 1, 2, ... busy peers). The replay itself prices each action
// once, before it runs, so the contention is found by a fixed point: replay,
// count for every action how many other ranks computed during it (on
// average over its time), stretch its profiled time by the slowdown at that
// count, and replay again, a few times. Each replay is deterministic, and
// so is the result.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "profiles/profile.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/link_model.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

// The slowdown at `busy_peers` (fractional: a mean over an action's time):
// linear from (0, 0) through the points, held at the last one past it. 0
// without points.
[[nodiscard]] double contention_slowdown(std::span<const profiles::ContentionPoint> points, double busy_peers);

// For each compute action of `timeline` (the compute and overlap streams), by
// its action_key (cost_model.hpp): the mean number of other ranks computing while it runs, its overlap with their
// compute actions over its duration (0 for an action that takes no time).
[[nodiscard]] std::unordered_map<std::uint64_t, double> busy_peers(const timelines::Timeline& timeline);

// `base`'s costs with each action's duration stretched by its factor (1 when
// it has none), rounded to the ns; memory and message sizes as `base` says.
class ContendedCosts final : public RepricedCosts {
 public:
  ContendedCosts(const CostModel& base, std::unordered_map<std::uint64_t, double> factors)
      : RepricedCosts(base), factors_(std::move(factors)) {}
  ContendedCosts(const CostModel&& base, std::unordered_map<std::uint64_t, double> factors) = delete;

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  // None: each action's factor is its own, from the busy peers the replay
  // before found beside it. (Those replays record a timeline, which only
  // the graph replay does.)
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override { return std::nullopt; }

 private:
  std::unordered_map<std::uint64_t, double> factors_;
};

inline constexpr int kContentionReplays = 4;

// simulate() with contention: `replays` replays in all, the first at the
// profiled times, each later one with every action stretched by the
// slowdown at the busy peers the one before found. The last replay's result,
// its timeline dropped unless options.record_timeline. Without points, or on
// one rank, simulate() itself. With `replicas` copies of the pipeline in
// step on the same machine (data parallelism on one node), an action whose
// pipeline keeps p other ranks busy has D p + D - 1 busy beside it: each
// other replica's p, and its copy of the action's own rank.
[[nodiscard]] SimResult simulate_with_contention(const schedules::Schedule& schedule, const CostModel& costs,
                                                 const LinkModel& links, const SimOptions& options,
                                                 std::span<const profiles::ContentionPoint> points,
                                                 int replays = kContentionReplays, int replicas = 1);

}  // namespace gpipe::sim
