// zb-auto's search: never slower than the handcrafted schedules that fit,
// within its memory budget, deterministic, at the lower bound where one is
// known, a clear error when nothing fits; and wired into predict().
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <optional>
#include <vector>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/validate.hpp"
#include "sim/engine.hpp"
#include "sim/scenario.hpp"
#include "sim/zb_auto.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::sim {
namespace {

using gpipe::testing::error_of;
using schedules::ActionKind;

struct StageTimes {
  std::int64_t f, i, w, a;  // ns, ns, ns, activation bytes per micro-batch
};

// Per-stage F, I, W times and activation bytes; B = I + W; messages of `boundary` bytes.
class StageCosts final : public CostModel {
 public:
  StageCosts(std::vector<StageTimes> stages, std::int64_t boundary) : stages_(std::move(stages)), boundary_(boundary) {}
  std::int64_t duration_ns(const schedules::Action& action) const override {
    const StageTimes& s = stages_.at(action.stage.at());
    switch (action.kind) {
      case ActionKind::F:
      case ActionKind::R: return s.f;
      case ActionKind::I: return s.i;
      case ActionKind::W: return s.w;
      case ActionKind::B: return s.i + s.w;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return boundary_; }
  std::int64_t activation_bytes(schedules::Stage s, schedules::Microbatch) const override {
    return stages_.at(s.at()).a;
  }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }

 private:
  std::vector<StageTimes> stages_;
  std::int64_t boundary_;
};

StageCosts uniform(int k, std::int64_t t = 1000, std::int64_t a = 1000) {
  return StageCosts(std::vector<StageTimes>(static_cast<std::size_t>(k), {t, t, t, a}), 0);
}

// A realistic shape: I a little dearer than F, W cheaper, a heavier last stage.
StageCosts skewed(int k) {
  std::vector<StageTimes> s(static_cast<std::size_t>(k), {1000, 1150, 850, 1000});
  s.back() = {1300, 1500, 1100, 1400};
  return StageCosts(s, 200'000);
}

schedules::ScheduleOptions options(int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return o;
}

SimResult simulate_totals(const schedules::Schedule& s, const CostModel& costs, const LinkModel& links) {
  SimOptions o;
  o.record_timeline = false;
  return simulate(s, costs, links, o);
}

bool fits(const timelines::Metrics& m, const std::vector<std::int64_t>& budget) {
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    if (!budget.empty() && m.ranks[r].peak_activation_bytes > budget[r]) return false;
  }
  return true;
}

TEST(ZbAuto, NeverSlowerThanAHandcraftedScheduleThatFitsAndKeepsItsBudget) {
  const UniformLink link(0.5, 10.0);  // 0.5 us + 200 kB at 10 GB/s = 20.5 us a message for skewed
  int searched = 0;
  int strictly_better = 0;
  for (const bool skew : {false, true}) {
    for (const int k : {2, 3, 4, 6}) {
      const StageCosts costs = skew ? skewed(k) : uniform(k);
      const std::int64_t a = costs.activation_bytes(schedules::Stage{k - 1}, schedules::Microbatch{0});
      for (const int m : {k, 2 * k, 3 * k + 1}) {
        // No limit; 1F1B's peak, K micro-batches; one and a half times it; ZB-H2's 2K-1.
        for (const std::optional<std::int64_t> held : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{k},
                                                       std::optional<std::int64_t>{(3 * k) / 2},
                                                       std::optional<std::int64_t>{2 * k - 1}}) {
          ZbAutoOptions search;
          if (held) search.activation_budget_bytes.assign(static_cast<std::size_t>(k), *held * a);
          const ZbAutoResult found = search_zb_auto(options(k, m), costs, link, search);
          EXPECT_EQ(found.schedule.name, "zb-auto");
          EXPECT_TRUE(schedules::find_errors(found.schedule).empty());
          const SimResult mine = simulate_totals(found.schedule, costs, link);
          EXPECT_EQ(mine.metrics.step_time_ns, found.step_time_ns);
          EXPECT_TRUE(fits(mine.metrics, search.activation_budget_bytes)) << found.chosen;
          std::int64_t best_handcrafted = std::numeric_limits<std::int64_t>::max();
          for (const char* name : {"1f1b", "zb-h1", "zb-h2"}) {
            const SimResult theirs = simulate_totals(schedules::generate(name, options(k, m)), costs, link);
            if (!fits(theirs.metrics, search.activation_budget_bytes)) continue;
            EXPECT_LE(found.step_time_ns, theirs.metrics.step_time_ns)
                << name << " K=" << k << " M=" << m << " skew=" << skew << " held=" << held.value_or(0);
            best_handcrafted = std::min(best_handcrafted, theirs.metrics.step_time_ns);
          }
          strictly_better += found.step_time_ns < best_handcrafted;
          ++searched;
        }
      }
    }
  }
  EXPECT_EQ(searched, 2 * 4 * 3 * 4);
  // The greedy earns its place: it beats every handcrafted schedule somewhere on this grid.
  EXPECT_GT(strictly_better, 0);
}

TEST(ZbAuto, ReachesTheLowerBoundWithEqualTimesAndFreeLinks) {
  // The last rank cannot start before (K-1) T_F and has 3 M T of work: ZB-H2 meets
  // that for M >= 2K-1 and unlimited memory, so the search must too.
  for (int k = 1; k <= 5; ++k) {
    for (int m = 2 * k - 1; m <= 2 * k + 2; ++m) {
      const ZbAutoResult found = search_zb_auto(options(k, m), uniform(k), FreeLink());
      EXPECT_EQ(found.step_time_ns, (k - 1) * 1000 + 3 * m * 1000) << "K=" << k << " M=" << m;
    }
  }
}

TEST(ZbAuto, TwoSearchesGiveTheSameSchedule) {
  const UniformLink link(0.5, 10.0);
  ZbAutoOptions search;
  search.activation_budget_bytes = {6000, 6000, 6000, 7000};
  const ZbAutoResult a = search_zb_auto(options(4, 12), skewed(4), link, search);
  const ZbAutoResult b = search_zb_auto(options(4, 12), skewed(4), link, search);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.chosen, b.chosen);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    EXPECT_EQ(a.candidates[i].label, b.candidates[i].label);
    EXPECT_EQ(a.candidates[i].step_time_ns, b.candidates[i].step_time_ns);
  }
  // The handcrafted three come first, then the greedy's policies.
  ASSERT_GE(a.candidates.size(), 4u);
  EXPECT_EQ(a.candidates[0].label, "1f1b");
  EXPECT_EQ(a.candidates[1].label, "zb-h1");
  EXPECT_EQ(a.candidates[2].label, "zb-h2");
  EXPECT_EQ(a.candidates[3].label, "greedy: in flight 1, I first, W eager");
}

TEST(ZbAuto, NamesTheLeanestCandidateWhenNothingFits) {
  // Below one micro-batch's activations (1000 bytes) no schedule can run.
  ZbAutoOptions search;
  search.activation_budget_bytes = {999, 999};
  EXPECT_EQ(error_of([&] { (void)search_zb_auto(options(2, 4), uniform(2), FreeLink(), search); }),
            "zb-auto: no schedule fits the memory limit; the leanest (greedy: in flight 1, I first, W eager) "
            "holds 1000 bytes of activations on rank 0, over its budget of 999 bytes");
  // One micro-batch's worth is enough: one in flight on every rank.
  search.activation_budget_bytes = {1000, 1000};
  const ZbAutoResult found = search_zb_auto(options(2, 4), uniform(2), FreeLink(), search);
  EXPECT_EQ(found.chosen, "greedy: in flight 1, I first, W eager");
  // Each micro-batch goes through before the next starts: on rank 0 its F, rank 1's F and I,
  // then its own I and W, 5 units of 1000 ns.
  EXPECT_EQ(found.step_time_ns, 4 * 5000);
}

TEST(ZbAuto, PredictSearchesWithinTheMemoryLimitLessStaticMemory) {
  // 8 layers of fwd 10 us, bwd 20 us (I = W = 10 us), 1000 activation bytes a sample; 4 stages of 2 layers.
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, /*activation=*/1000);
  Scenario sc;
  sc.request.schedule = "zb-auto";
  sc.request.stages = 4;
  sc.request.stages_per_rank = 1;  // the single-chunk search alone
  sc.request.microbatches = 8;
  sc.request.micro_batch_size = 1;
  const Prediction free = predict(profile, sc);
  EXPECT_EQ(free.plan.schedule.name, "zb-auto");
  EXPECT_FALSE(free.searched.empty());
  // T_F = T_I = T_W = 20 us a stage: the lower bound (K-1) T_F + 3 M T.
  EXPECT_EQ(free.metrics.step_time_ns, 3 * 20'000 + 3 * 8 * 20'000);

  // Static memory: 2 layers of 100 fp32 parameters, adamw: 3200 bytes a rank. Room
  // for 4 micro-batches of 2000 bytes, 1F1B's peak: ZB-H1 fits, and with T_F = T_I
  // = T_W its step, 3 M T + (K-1)(T_F + T_I - T_W), is already the lower bound.
  sc.conditions.memory_limit_bytes = 3200 + 4 * 2000;
  const Prediction one_f_one_b_peak = predict(profile, sc);
  for (const auto& r : one_f_one_b_peak.metrics.ranks) EXPECT_LE(r.peak_activation_bytes, 4 * 2000);
  EXPECT_EQ(one_f_one_b_peak.metrics.step_time_ns, free.metrics.step_time_ns);
  // Room for 2: slower, and within it.
  sc.conditions.memory_limit_bytes = 3200 + 2 * 2000;
  const Prediction two = predict(profile, sc);
  for (const auto& r : two.metrics.ranks) EXPECT_LE(r.peak_activation_bytes, 2 * 2000);
  EXPECT_GT(two.metrics.step_time_ns, free.metrics.step_time_ns);

  sc.conditions.memory_limit_bytes = 3200;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "--memory-limit 3200 bytes leaves no room for activations on rank 0: its parameters, gradients and "
            "optimizer state take 3200 bytes");
  sc.conditions.memory_limit_bytes = 3200 + 1999;
  EXPECT_EQ(error_of([&] { (void)predict(profile, sc); }),
            "--memory-limit 5199 bytes per rank: zb-auto: no schedule fits the memory limit; the leanest (greedy: "
            "in flight 1, I first, W eager) holds 2000 bytes of activations on rank 0, over its budget of 1999 "
            "bytes");
}

TEST(ZbAuto, PredictAlsoTriesEachMultiChunkFamilyOnItsOwnLayout) {
  // 8 layers, K = 4, M = 8: the multi-chunk families cut 8 stages of 1 layer.
  const auto profile = testing::uniform_profile(8, 10.0, 20.0, /*activation=*/1000);
  Scenario sc;
  sc.request.stages = 4;
  sc.request.microbatches = 8;
  sc.request.micro_batch_size = 1;
  std::int64_t best_handcrafted = std::numeric_limits<std::int64_t>::max();
  for (const std::string& name : schedules::schedule_names()) {
    sc.request.schedule = name;
    best_handcrafted = std::min(best_handcrafted, predict(profile, sc).metrics.step_time_ns);
  }
  sc.request.schedule = "zb-auto";
  const Prediction found = predict(profile, sc);
  EXPECT_LE(found.metrics.step_time_ns, best_handcrafted);
  EXPECT_EQ(found.plan.schedule.name, "zb-auto");
  // Here a V-shaped layout wins: half the stage time halves the fill and drain.
  EXPECT_EQ(found.plan.schedule.num_stages, 8) << found.searched;
  EXPECT_TRUE(found.searched.ends_with(", V=2")) << found.searched;
  EXPECT_EQ(found.plan.partition.layers_per_stage, std::vector<int>(8, 1));

  // V = 1 keeps to one stage per rank; V = 3 cannot cut 8 layers into 12 stages.
  sc.request.stages_per_rank = 1;
  EXPECT_EQ(predict(profile, sc).plan.schedule.num_stages, 4);
  sc.request.stages_per_rank = 3;
  EXPECT_NE(error_of([&] { (void)predict(profile, sc); }).find("12 stages (3 per rank), more than the 8 layers"),
            std::string::npos);
}

TEST(ZbAuto, PredictableNamesAddTheSearchToTheGenerators) {
  std::vector<std::string> names = schedules::schedule_names();
  names.emplace_back("zb-auto");
  EXPECT_EQ(predictable_schedule_names(), names);
}

}  // namespace
}  // namespace gpipe::sim
