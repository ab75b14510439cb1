#include "sim/inference/predict.hpp"

#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/contention.hpp"
#include "sim/jitter.hpp"

namespace gpipe::sim::inference {
namespace {

// Every item of a stage costs the same: one micro-batch of b.
class StageCosts final : public CostModel {
 public:
  explicit StageCosts(const std::vector<profiles::StageCost>& stages) : stages_(stages) {}

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& a) const override {
    return a.kind == schedules::ActionKind::F ? stages_.at(a.stage.at()).fwd_ns : 0;
  }
  [[nodiscard]] std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch) const override {
    return stages_.at(s.at()).output_bytes;
  }
  [[nodiscard]] std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  [[nodiscard]] std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }

 private:
  const std::vector<profiles::StageCost>& stages_;
};

// With a profile's contention (sim/contention.hpp), as training does: replay,
// count for every forward the ranks computing beside it, stretch it by the
// slowdown there, and replay again, kContentionReplays times in all.
ServingRun replay_contended(const CostModel& costs, const LinkModel& link, int num_stages, const Workload& w,
                           const std::vector<std::int64_t>& state, bool record,
                           std::span<const profiles::ContentionPoint> points) {
  if (points.empty() || num_stages < 2) return replay(costs, link, num_stages, w, state, record);
  ServingRun run = replay(costs, link, num_stages, w, state, true);
  for (int i = 1; i < kContentionReplays; ++i) {
    std::unordered_map<std::uint64_t, double> factors = busy_peers(run.timeline);
    for (auto& [key, peers] : factors) peers = 1 + contention_slowdown(points, peers);
    const ContendedCosts contended(costs, std::move(factors));
    run = replay(contended, link, num_stages, w, state, record || i + 1 < kContentionReplays);
  }
  return run;
}

StochasticResult run_jittered(const Prediction& p, const CostModel& base, const LinkModel& link,
                              const Scenario& sc, const std::vector<std::int64_t>& state,
                              std::span<const profiles::ContentionPoint> points) {
  const Jitter& j = sc.conditions.jitter;
  StochasticResult out{.cv = j.cv, .runs = j.runs, .seed = j.seed};
  std::vector<double> step_us, throughput;
  // Every run's items, for the latency percentiles (its rank totals are unused).
  ServingRun pooled;
  const auto K = static_cast<std::size_t>(p.plan.partition.num_stages());
  pooled.busy_ns.assign(K, 0);
  pooled.peak_bytes.assign(K, 0);
  pooled.state_bytes.assign(K, 0);
  for (int i = 0; i < j.runs; ++i) {
    const JitteredCosts costs(base, j.cv, run_seed(j.seed, i));
    ServingRun run = replay_contended(costs, link, p.plan.partition.num_stages(), sc.workload, state, false, points);
    const timelines::ServingMetrics m = timelines::compute_serving_metrics(run, sc.workload.in_flight, p.plan.micro_batch_size, {});
    step_us.push_back(m.step_time_us);
    throughput.push_back(m.throughput_items_per_s);
    pooled.items.insert(pooled.items.end(), run.items.begin(), run.items.end());
  }
  out.step_time_us = spread_of(std::move(step_us));
  out.throughput_items_per_s = spread_of(std::move(throughput));
  out.latency = timelines::compute_serving_metrics(pooled, sc.workload.in_flight, p.plan.micro_batch_size, {}).latency;
  return out;
}

}  // namespace

Prediction predict(const profiles::Profile& profile, const Scenario& sc, bool record_timeline) {
  validate_workload(sc.workload);
  validate_jitter(sc.conditions.jitter.cv, sc.conditions.jitter.runs);
  Prediction p;
  const UniformLink link = link_of(profile, sc.conditions);
  p.link_latency_us = link.latency_us();
  p.link_bandwidth_GBps = link.bandwidth_GBps();
  p.plan = plan::make_inference_plan(profile, sc.request);
  std::vector<std::int64_t> state;
  for (const profiles::StageCost& stage : p.plan.stages) state.push_back(stage.state_bytes);
  const StageCosts costs(p.plan.stages);
  p.run = replay_contended(costs, link, p.plan.partition.num_stages(), sc.workload, state, record_timeline,
                           profile.contention);
  p.metrics = timelines::compute_serving_metrics(p.run, sc.workload.in_flight, p.plan.micro_batch_size, p.plan.static_bytes);
  if (record_timeline) {
    p.run.timeline.info = timelines::serving_info(p.plan.partition.num_stages(), sc.workload.requests,
                                                 p.plan.micro_batch_size, "sim", profile.device, p.plan.static_bytes);
  }
  if (sc.conditions.jitter.cv > 0) p.stochastic = run_jittered(p, costs, link, sc, state, profile.contention);
  return p;
}

nlohmann::json to_json(const StochasticResult& r) {
  const auto spread = [](const Spread& s) {
    return nlohmann::json{{"p5", s.p5}, {"p50", s.p50}, {"p95", s.p95}, {"mean", s.mean}, {"min", s.min}, {"max", s.max}};
  };
  const Latency& l = r.latency;
  return {{"jitter_cv", r.cv},
          {"runs", r.runs},
          {"seed", r.seed},
          {"percentile_method", "nearest-rank"},
          {"step_time_us", spread(r.step_time_us)},
          {"throughput_items_per_s", spread(r.throughput_items_per_s)},
          {"latency_us",
           {{"first", l.first_us}, {"mean", l.mean_us}, {"p50", l.p50_us}, {"p90", l.p90_us}, {"p99", l.p99_us},
            {"max", l.max_us}}}};
}

}  // namespace gpipe::sim::inference
