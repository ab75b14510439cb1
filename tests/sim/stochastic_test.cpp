// The stochastic mode: the jitter decorator (seeded per action, lognormal with
// mean 1 and the requested CV), nearest-rank percentiles, and N seeded runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "sim/jitter.hpp"
#include "sim/link_model.hpp"
#include "sim/scenario.hpp"
#include "sim/stochastic.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::make_action;
using schedules::Microbatch;
using schedules::Stage;

// Every action its own duration and every stage its own bytes, so a decorator
// that mixed actions up or touched bytes would show.
class CostsToJitter final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& a) const override {
    if (schedules::is_comm(a.kind)) return 7'000 + a.stage.value;
    if (a.kind == ActionKind::STEP) return 500'000;
    const std::int64_t base = 1'000'000 + 1'000 * a.stage.value + a.microbatch.value;
    return a.kind == ActionKind::F ? base : 2 * base;
  }
  std::int64_t boundary_bytes(Stage s, Microbatch m) const override { return 100 + s.value * 10 + m.value; }
  std::int64_t activation_bytes(Stage s, Microbatch m) const override { return 200 + s.value * 10 + m.value; }
  std::int64_t stashed_input_bytes(Stage s, Microbatch m) const override { return 300 + s.value * 10 + m.value; }
};

using gpipe::testing::error_of;

std::vector<Action> compute_actions(int stages, int microbatches) {
  std::vector<Action> actions;
  for (int s = 0; s < stages; ++s) {
    for (int m = 0; m < microbatches; ++m) {
      actions.push_back(make_action(s, ActionKind::F, m));
      actions.push_back(make_action(s, ActionKind::B, m));
    }
    actions.push_back(make_action(s, ActionKind::STEP));
  }
  return actions;
}

schedules::Schedule gpipe_schedule(int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return schedules::generate("gpipe", o);
}

SimOptions sim_options() {
  SimOptions o;
  o.batch_size = 32;
  return o;
}

// It keeps a reference to its base: a temporary base does not compile.
static_assert(std::is_constructible_v<JitteredCosts, const CostsToJitter&, double, std::uint64_t>);
static_assert(!std::is_constructible_v<JitteredCosts, CostsToJitter, double, std::uint64_t>);

TEST(JitteredCosts, CvZeroIsTheBaseExactly) {
  const CostsToJitter base;
  const JitteredCosts jittered(base, 0.0, 42);
  for (const Action& a : compute_actions(4, 8)) EXPECT_EQ(jittered.duration_ns(a), base.duration_ns(a)) << to_string(a);
  EXPECT_EQ(jitter_factor(make_action(1, ActionKind::F, 2), 0.0, 42), 1.0);
}

TEST(JitteredCosts, BytesAndCommActionsPassThrough) {
  const CostsToJitter base;
  const JitteredCosts jittered(base, 0.5, 3);
  for (int s = 0; s < 3; ++s) {
    for (int m = 0; m < 3; ++m) {
      EXPECT_EQ(jittered.boundary_bytes(Stage{s}, Microbatch{m}), base.boundary_bytes(Stage{s}, Microbatch{m}));
      EXPECT_EQ(jittered.activation_bytes(Stage{s}, Microbatch{m}), base.activation_bytes(Stage{s}, Microbatch{m}));
      EXPECT_EQ(jittered.stashed_input_bytes(Stage{s}, Microbatch{m}),
                base.stashed_input_bytes(Stage{s}, Microbatch{m}));
    }
    const Action send = make_action(s, ActionKind::SEND_F, 1);
    EXPECT_EQ(jittered.duration_ns(send), base.duration_ns(send));
  }
}

TEST(JitteredCosts, DurationIsBaseTimesTheFactorRounded) {
  const CostsToJitter base;
  const JitteredCosts jittered(base, 0.2, 9);
  int changed = 0;
  for (const Action& a : compute_actions(3, 4)) {
    const std::int64_t d = jittered.duration_ns(a);
    EXPECT_EQ(d, std::llround(static_cast<double>(base.duration_ns(a)) * jitter_factor(a, 0.2, 9))) << to_string(a);
    EXPECT_GT(d, 0) << to_string(a);
    changed += d != base.duration_ns(a);
  }
  EXPECT_GT(changed, 0);
}

TEST(JitteredCosts, SameSeedSameDrawsOtherSeedOtherDraws) {
  const CostsToJitter base;
  const JitteredCosts a(base, 0.1, 5), same(base, 0.1, 5), other(base, 0.1, 6);
  int differ = 0;
  const auto actions = compute_actions(4, 8);
  for (const Action& act : actions) {
    EXPECT_EQ(a.duration_ns(act), same.duration_ns(act)) << to_string(act);
    differ += a.duration_ns(act) != other.duration_ns(act);
  }
  // With CV 0.1 on ~1 ms a draw equal to the ns by chance is ~1e-5 per action.
  EXPECT_EQ(differ, static_cast<int>(actions.size()));
}

TEST(JitteredCosts, DrawsDoNotDependOnAskOrder) {
  const CostsToJitter base;
  auto actions = compute_actions(4, 8);
  const JitteredCosts forward(base, 0.3, 11);
  std::map<Action, std::int64_t> first;
  for (const Action& a : actions) first[a] = forward.duration_ns(a);
  std::reverse(actions.begin(), actions.end());
  const JitteredCosts backward(base, 0.3, 11);
  for (const Action& a : actions) {
    EXPECT_EQ(backward.duration_ns(a), first.at(a)) << to_string(a);
    EXPECT_EQ(backward.duration_ns(a), first.at(a)) << "asked twice: " << to_string(a);
  }
}

TEST(JitteredCosts, FactorHasMeanOneAndTheRequestedCv) {
  // 102,400 draws (a fixed seed, so the test is deterministic). Tolerances:
  // mean within 1 % of 1 and sample CV within 5 % of the requested; the
  // standard errors here are ~0.1-0.3 % and ~0.2-1 %, well inside.
  const auto actions = compute_actions(64, 800);
  for (const double cv : {0.05, 0.3}) {
    double sum = 0, sum_sq = 0;
    for (const Action& a : actions) {
      const double x = jitter_factor(a, cv, 2024);
      ASSERT_GT(x, 0.0);
      sum += x;
      sum_sq += x * x;
    }
    const double n = static_cast<double>(actions.size());
    const double mean = sum / n;
    const double sd = std::sqrt((sum_sq - n * mean * mean) / (n - 1));
    EXPECT_NEAR(mean, 1.0, 0.01) << "cv " << cv;
    EXPECT_NEAR(sd / mean, cv, 0.05 * cv) << "cv " << cv;
  }
}

TEST(JitteredCosts, RejectsBadCvNamingTheFlag) {
  const CostsToJitter base;
  EXPECT_EQ(error_of([&] { JitteredCosts(base, -1.0, 1); }),
            "--jitter must be a coefficient of variation from 0 to 10, got -1");
  EXPECT_EQ(error_of([&] { JitteredCosts(base, std::numeric_limits<double>::quiet_NaN(), 1); }),
            "--jitter must be a coefficient of variation from 0 to 10, got nan");
  EXPECT_EQ(error_of([&] { JitteredCosts(base, std::numeric_limits<double>::infinity(), 1); }),
            "--jitter must be a coefficient of variation from 0 to 10, got inf");
  EXPECT_EQ(error_of([] { (void)jitter_factor(make_action(0, ActionKind::F, 0), -0.5, 1); }),
            "--jitter must be a coefficient of variation from 0 to 10, got -0.5");
}

TEST(NearestRank, RankIsCeilOfPTimesNOver100) {
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  EXPECT_EQ(nearest_rank(twenty, 5), 1);    // ceil(1.0)
  EXPECT_EQ(nearest_rank(twenty, 50), 10);  // ceil(10.0)
  EXPECT_EQ(nearest_rank(twenty, 95), 19);  // ceil(19.0)
  EXPECT_EQ(nearest_rank(twenty, 100), 20);
  const std::vector<double> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank(ten, 5), 1);    // ceil(0.5)
  EXPECT_EQ(nearest_rank(ten, 50), 5);   // ceil(5.0)
  EXPECT_EQ(nearest_rank(ten, 95), 10);  // ceil(9.5)
  const std::vector<double> one{3.5};
  EXPECT_EQ(nearest_rank(one, 5), 3.5);
  EXPECT_EQ(nearest_rank(one, 95), 3.5);
}

TEST(NearestRank, SpreadOfUnsortedValues) {
  const Spread s = spread_of({4, 1, 3, 2});
  EXPECT_EQ(s, (Spread{1, 2, 4, 2.5, 1, 4}));
}

TEST(RunStochastic, CvZeroGivesTheDeterministicMetricsEveryRun) {
  const CostsToJitter costs;
  const UniformLink link(1.0, 10.0);
  const auto schedule = gpipe_schedule(4, 8);
  const StochasticResult r = run_stochastic(schedule, costs, link, sim_options(), 0.0, 5, 1);
  EXPECT_EQ(r.deterministic, simulate(schedule, costs, link, sim_options()).metrics);
  ASSERT_EQ(r.per_run.size(), 5u);
  for (const auto& m : r.per_run) EXPECT_EQ(m, r.deterministic);
  const double t = r.deterministic.step_time_us;
  EXPECT_EQ(r.step_time_us, (Spread{t, t, t, t, t, t}));
}

TEST(RunStochastic, SeedsAreReproducibleAndRunIUsesRunSeed) {
  const CostsToJitter costs;
  const UniformLink link(1.0, 10.0);
  const auto schedule = gpipe_schedule(4, 8);
  const auto a = run_stochastic(schedule, costs, link, sim_options(), 0.1, 4, 7);
  const auto same = run_stochastic(schedule, costs, link, sim_options(), 0.1, 4, 7);
  const auto other = run_stochastic(schedule, costs, link, sim_options(), 0.1, 4, 100);
  EXPECT_EQ(a.per_run, same.per_run);
  EXPECT_EQ(a.step_time_us, same.step_time_us);
  EXPECT_NE(a.step_time_us, other.step_time_us);
  EXPECT_NE(a.per_run[0], a.per_run[1]);
  // Run i is one simulation at run_seed(seed, i).
  for (int i = 0; i < 4; ++i) {
    const JitteredCosts run(costs, 0.1, run_seed(7, i));
    SimOptions options = sim_options();
    options.record_timeline = false;
    EXPECT_EQ(a.per_run[static_cast<std::size_t>(i)], simulate(schedule, run, link, options).metrics) << i;
  }
  // The next seed shares no run with this one (seed + i would share three of four).
  const auto next = run_stochastic(schedule, costs, link, sim_options(), 0.1, 4, 8);
  for (const auto& m : next.per_run) {
    EXPECT_EQ(std::count(a.per_run.begin(), a.per_run.end(), m), 0);
  }
}

TEST(RunStochastic, PercentilesAreOrderedAndSpread) {
  const CostsToJitter costs;
  const UniformLink link(1.0, 10.0);
  const auto r = run_stochastic(gpipe_schedule(4, 8), costs, link, sim_options(), 0.1, 50, 1);
  for (const Spread& s : {r.step_time_us, r.bubble_fraction, r.throughput_samples_per_s}) {
    EXPECT_LE(s.min, s.p5);
    EXPECT_LE(s.p5, s.p50);
    EXPECT_LE(s.p50, s.p95);
    EXPECT_LE(s.p95, s.max);
    EXPECT_LE(s.min, s.mean);
    EXPECT_LE(s.mean, s.max);
    EXPECT_LT(s.min, s.max);
  }
  // A step is the longest chain, so jitter with mean 1 lengthens it on average.
  EXPECT_GT(r.step_time_us.mean, r.deterministic.step_time_us);
}

TEST(RunStochastic, JsonNamesTheNumbers) {
  const CostsToJitter costs;
  const UniformLink link(1.0, 10.0);
  const auto r = run_stochastic(gpipe_schedule(2, 4), costs, link, sim_options(), 0.05, 3, 1);
  const auto j = to_json(r);
  EXPECT_EQ(j.at("runs"), 3);
  EXPECT_EQ(j.at("seed"), 1);
  EXPECT_EQ(j.at("jitter_cv"), 0.05);
  EXPECT_EQ(j.at("percentile_method"), "nearest-rank");
  EXPECT_EQ(j.at("step_time_us").at("p50"), r.step_time_us.p50);
  EXPECT_EQ(j.at("bubble_fraction").at("deterministic"), r.deterministic.bubble_fraction);
  EXPECT_EQ(j.at("throughput_samples_per_s").at("p95"), r.throughput_samples_per_s.p95);
}

TEST(RunStochastic, RejectsBadRunsAndCvNamingTheFlag) {
  const CostsToJitter costs;
  const UniformLink link(1.0, 10.0);
  const auto schedule = gpipe_schedule(2, 2);
  EXPECT_EQ(error_of([&] { (void)run_stochastic(schedule, costs, link, sim_options(), 0.1, 0, 1); }),
            "--runs must be at least 1, got 0");
  EXPECT_EQ(error_of([&] { (void)run_stochastic(schedule, costs, link, sim_options(), -0.1, 10, 1); }),
            "--jitter must be a coefficient of variation from 0 to 10, got -0.1");
}

TEST(PredictStochastic, JitterAddsPercentilesBesideTheDeterministicRun) {
  const auto profile = testing::uniform_profile(8, 10.0, 20.0);
  Scenario sc;
  sc.request.stages = 4;
  sc.request.microbatches = 8;
  sc.request.batch = 16;
  EXPECT_FALSE(predict(profile, sc).stochastic.has_value());
  sc.conditions.jitter = {0.05, 10, 3};
  const Prediction p = predict(profile, sc);
  ASSERT_TRUE(p.stochastic.has_value());
  EXPECT_EQ(p.stochastic->runs, 10);
  EXPECT_EQ(p.stochastic->per_run.size(), 10u);
  EXPECT_EQ(p.stochastic->deterministic, p.metrics);
  EXPECT_EQ(p.metrics.step_time_ns, (8 + 4 - 1) * 120'000);  // the closed form, untouched
  sc.conditions.jitter.runs = 0;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }), "--runs must be at least 1, got 0");
}

}  // namespace
}  // namespace gpipe::sim
