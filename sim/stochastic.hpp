// The simulator's stochastic mode (docs/design.md): N runs of one schedule with
// jittered compute durations (sim/jitter.hpp), seeds seed, seed+1, ...,
// reported as percentiles over the runs beside the deterministic run.
//
// Percentiles use the nearest-rank method: of N values sorted ascending, the
// p-th percentile is the value of rank ceil(p * N / 100) (1-based, at least 1),
// always one of the observed values, so p5 <= p50 <= p95 holds by construction.
#pragma once

#include "base/percentile.hpp"

#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/schedule.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/link_model.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {

// What `gpipe-sim run --jitter CV --runs N --seed S` asks for; cv 0 is the
// deterministic simulator and no runs are made.
struct Jitter {
  double cv = 0.0;
  int runs = 100;
  std::uint64_t seed = 1;
};

// Throws InputError naming --jitter (cv negative or not finite) or --runs (< 1).
void validate_jitter(double cv, int runs);

// One metric over the runs.
struct Spread {
  double p5 = 0, p50 = 0, p95 = 0;  // nearest rank
  double mean = 0, min = 0, max = 0;

  bool operator==(const Spread&) const = default;
};

// The nearest-rank percentile (base/percentile.hpp).
// Percentiles, mean, min and max of values (not empty; any order).
[[nodiscard]] Spread spread_of(std::vector<double> values);

struct StochasticResult {
  double cv = 0;
  int runs = 0;
  std::uint64_t seed = 0;
  timelines::Metrics deterministic;          // the run without jitter
  std::vector<timelines::Metrics> per_run;   // run i used seed + i
  Spread step_time_us;
  Spread bubble_fraction;
  Spread throughput_samples_per_s;
};

// Simulates the schedule once as given and `runs` times with JitteredCosts
// (seed + i for run i), without recording timelines. The schedule is validated
// once, if options.validate asks. Throws InputError from validate_jitter and
// for an invalid schedule.
[[nodiscard]] StochasticResult run_stochastic(const schedules::Schedule& schedule, const CostModel& base,
                                              const LinkModel& links, SimOptions options, double cv,
                                              int runs, std::uint64_t seed);

// {"jitter_cv", "runs", "seed", "percentile_method": "nearest-rank",
//  "step_time_us" / "bubble_fraction" / "throughput_samples_per_s":
//  {"p5", "p50", "p95", "mean", "min", "max", "deterministic"}}.
[[nodiscard]] nlohmann::json to_json(const StochasticResult& result);

}  // namespace gpipe::sim
