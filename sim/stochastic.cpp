#include "sim/stochastic.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

#include <fmt/format.h>

#include "base/error.hpp"
#include "sim/jitter.hpp"

namespace gpipe::sim {
namespace {

Spread spread_of_metric(const std::vector<timelines::Metrics>& runs,
                        double timelines::Metrics::*field) {
  std::vector<double> values;
  values.reserve(runs.size());
  for (const auto& m : runs) values.push_back(m.*field);
  return spread_of(std::move(values));
}

nlohmann::json spread_json(const Spread& s, double deterministic) {
  return {{"p5", s.p5},     {"p50", s.p50}, {"p95", s.p95},
          {"mean", s.mean}, {"min", s.min}, {"max", s.max},
          {"deterministic", deterministic}};
}

}  // namespace

void validate_jitter(double cv, int runs) {
  validate_jitter_cv(cv);
  if (runs < 1) throw InputError(fmt::format("--runs must be at least 1, got {}", runs));
}


Spread spread_of(std::vector<double> values) {
  assert(!values.empty());
  std::sort(values.begin(), values.end());
  Spread s;
  s.p5 = nearest_rank(values, 5);
  s.p50 = nearest_rank(values, 50);
  s.p95 = nearest_rank(values, 95);
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.min = values.front();
  s.max = values.back();
  return s;
}

StochasticResult run_stochastic(const schedules::Schedule& schedule, const CostModel& base,
                                const LinkModel& links, SimOptions options, double cv, int runs,
                                std::uint64_t seed) {
  validate_jitter(cv, runs);
  StochasticResult r;
  r.cv = cv;
  r.runs = runs;
  r.seed = seed;
  options.record_timeline = false;
  r.deterministic = simulate(schedule, base, links, options).metrics;
  options.validate = false;  // checked by the run above
  r.per_run.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    const JitteredCosts costs(base, cv, run_seed(seed, i));
    r.per_run.push_back(simulate(schedule, costs, links, options).metrics);
  }
  r.step_time_us = spread_of_metric(r.per_run, &timelines::Metrics::step_time_us);
  r.bubble_fraction = spread_of_metric(r.per_run, &timelines::Metrics::bubble_fraction);
  r.throughput_samples_per_s = spread_of_metric(r.per_run, &timelines::Metrics::throughput_samples_per_s);
  return r;
}

nlohmann::json to_json(const StochasticResult& r) {
  return {{"jitter_cv", r.cv},
          {"runs", r.runs},
          {"seed", r.seed},
          {"percentile_method", "nearest-rank"},
          {"step_time_us", spread_json(r.step_time_us, r.deterministic.step_time_us)},
          {"bubble_fraction", spread_json(r.bubble_fraction, r.deterministic.bubble_fraction)},
          {"throughput_samples_per_s",
           spread_json(r.throughput_samples_per_s, r.deterministic.throughput_samples_per_s)}};
}

}  // namespace gpipe::sim
