// One inference configuration to predict (`gpipe-sim run --workload
// inference`): the plan (plan/inference_plan.hpp), the workload, and what the
// simulator assumes beyond them (the link, jitter). With jitter, R items are
// replayed `runs` times with jittered forwards (sim/jitter.hpp, seeds seed,
// seed+1, ...), and the latency percentiles are those of every item of every run.
#pragma once

#include <optional>

#include "plan/inference_plan.hpp"
#include "profiles/profile.hpp"
#include "schedules/serving_workload.hpp"
#include "sim/inference/replay.hpp"
#include "sim/scenario.hpp"
#include "sim/stochastic.hpp"
#include "timelines/serving_metrics.hpp"

namespace gpipe::sim::inference {

using timelines::Latency;
using timelines::RankLoad;
using timelines::ServingMetrics;

struct Scenario {
  plan::InferenceRequest request;
  Workload workload;
  Conditions conditions;  // the link's overrides and the jitter; the rest is training's
};

// Over the jittered runs: the spread of their step times and throughputs, and
// the latency percentiles of all their items together.
struct StochasticResult {
  double cv = 0;
  int runs = 0;
  std::uint64_t seed = 0;
  Spread step_time_us;
  Spread throughput_items_per_s;
  Latency latency;

  bool operator==(const StochasticResult&) const = default;
};

struct Prediction {
  plan::InferencePlan plan;
  double link_latency_us = 0;
  double link_bandwidth_GBps = 0;
  ServingRun run;  // its timeline's info filled when recorded
  timelines::ServingMetrics metrics;
  std::optional<StochasticResult> stochastic;
};

// Throws InputError for a workload, plan, link or jitter that cannot be.
[[nodiscard]] Prediction predict(const profiles::Profile& profile, const Scenario& scenario, bool record_timeline = true);

[[nodiscard]] nlohmann::json to_json(const StochasticResult& result);

}  // namespace gpipe::sim::inference
