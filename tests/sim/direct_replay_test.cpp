// The direct replay (sim/direct_replay.hpp) against the graph replay: the same
// metrics, to the ns and the byte, for every generated family and recompute
// policy, uneven micro-batch sizes, a split backward, links that cost, and
// stages that share a rank; a profile's costs alone and repriced by data
// parallelism (every ZeRO stage) and action overheads, which simulate() now
// replays directly too. And where it steps aside for the graph replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "plan/plan.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "sim/action_overhead.hpp"
#include "sim/contention.hpp"
#include "sim/data_parallel.hpp"
#include "sim/direct_replay.hpp"
#include "sim/engine.hpp"
#include "sim/jitter.hpp"
#include "sim/profile_costs.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;
using schedules::RecomputePolicy;
using schedules::Schedule;

// Twelve layers, each its own costs at micro-batch sizes 1 and 4 (so that the
// two sizes of an uneven split differ in every field), with a split backward
// and a weight-gradient stash smaller than the activations.
profiles::Profile distinct_profile() {
  profiles::Profile p;
  p.device = "test device";
  p.source = "analytic";
  p.dtype = "fp32";
  p.model = "test";
  p.link.latency_us = 3.5;  // a link that costs something
  p.link.bandwidth_GBps = 0.7;
  for (int i = 0; i < 12; ++i) {
    profiles::LayerProfile layer;
    layer.name = "layer" + std::to_string(i);
    layer.kind = "test";
    layer.param_bytes = 1000 + 10 * i;
    layer.optimizer_us = 2.0 + 0.1 * i;
    for (const int b : {1, 4}) {
      profiles::ProfileSample s;
      s.micro_batch_size = b;
      s.fwd_us = b * (10.0 + 1.3 * i) + 0.7;
      s.bwd_us = b * (21.0 + 2.9 * i) + 1.1;
      s.bwd_input_us = b * (11.0 + 1.7 * i) + 0.5;
      s.bwd_weight_us = b * (10.0 + 1.2 * i) + 0.6;
      s.input_bytes = b * (400 + 8 * i);
      s.output_bytes = b * (400 + 8 * (i + 1));
      s.activation_bytes = b * (3000 + 50 * i);
      s.weight_grad_stash_bytes = b * (900 + 20 * i);
      layer.samples.push_back(s);
    }
    p.layers.push_back(layer);
  }
  return p;
}

// A price that depends on the link's direction and ends, and on the bytes.
class DistinctLinksWithLatency final : public LinkModel {
 public:
  std::int64_t transfer_ns(schedules::Rank from, schedules::Rank to, std::int64_t bytes) const override {
    return 3000 + from.value * 1000 + to.value * 100 + bytes / 3;
  }
};

// Messages that outlast any pass, so that a message the replay sent that the
// graph's does not (one from the last stage's F) would hold a link past a
// backward's gradient.
class SlowerThanAnyPass final : public LinkModel {
 public:
  std::int64_t transfer_ns(schedules::Rank, schedules::Rank, std::int64_t bytes) const override {
    return 5'000'000 + bytes;
  }
};

struct Case {
  Schedule schedule;
  std::optional<ProfileCosts> costs;
};

// The plan's schedule and costs, or nothing for a configuration that cannot exist.
std::optional<Case> planned(plan::Planner& planner, const std::string& family, RecomputePolicy policy, int k,
                            int m, std::int64_t n) {
  plan::PlanRequest r;
  r.schedule = family;
  r.recompute = policy;
  r.stages = k;
  r.microbatches = m;
  r.batch = n;
  try {
    plan::Plan p = planner.make(r);
    Case c{std::move(p.schedule), std::nullopt};
    c.costs.emplace(planner, p.partition.layers_per_stage, p.microbatch_sizes);
    return c;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

class DirectReplayTest : public ::testing::Test {
 protected:
  const profiles::Profile profile = distinct_profile();
  plan::Planner planner{profile};
  const UniformLink link{profile.link.latency_us, profile.link.bandwidth_GBps};
};

TEST_F(DirectReplayTest, EqualsTheGraphReplayForEveryFamily) {
  const DistinctLinksWithLatency distinct;
  const SlowerThanAnyPass slow;
  int checked = 0;
  int uneven = 0;
  for (const std::string& family : schedules::schedule_names()) {
    for (const auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
      for (const int k : {1, 2, 3, 4, 6}) {
        for (const int m : {1, 2, 3, 5, 8, 12}) {
          // N = 3M - 1: micro-batches of 3 and of 2 samples (sizes the profile
          // interpolates between its two samples).
          const std::int64_t n = 3 * m - 1;
          std::optional<Case> c = planned(planner, family, policy, k, m, n);
          if (!c) continue;
          const std::string what = family + " " + std::string(to_string(policy)) + " K=" + std::to_string(k) +
                                   " M=" + std::to_string(m);
          SimOptions options;
          options.batch_size = n;
          options.static_bytes.assign(static_cast<std::size_t>(k), 77);
          for (const LinkModel* link : {static_cast<const LinkModel*>(&link), static_cast<const LinkModel*>(&distinct),
                                        static_cast<const LinkModel*>(&slow)}) {
            options.record_timeline = false;
            const std::optional<SimResult> direct = try_direct_replay(c->schedule, *c->costs, *link, options);
            ASSERT_TRUE(direct.has_value()) << what;
            options.record_timeline = true;  // the graph replay: the direct one records nothing
            const SimResult graph = simulate(c->schedule, *c->costs, *link, options);
            EXPECT_EQ(direct->metrics, graph.metrics) << what;
            EXPECT_GT(direct->metrics.step_time_ns, 0) << what;
            EXPECT_EQ(direct->timeline.info.source, "sim");
            EXPECT_TRUE(direct->timeline.actions.empty());
          }
          uneven += c->costs->microbatch_sizes().front() != c->costs->microbatch_sizes().back() ? 1 : 0;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 700);
  EXPECT_GT(uneven, 500);
}

TEST_F(DirectReplayTest, StepsAsideWhereTheGraphReplayIsNeeded) {
  std::optional<Case> c = planned(planner, "1f1b", RecomputePolicy::never, 2, 4, 8);
  ASSERT_TRUE(c.has_value());
  SimOptions options;
  options.record_timeline = false;
  EXPECT_TRUE(try_direct_replay(c->schedule, *c->costs, link, options).has_value());
  options.record_timeline = true;
  EXPECT_FALSE(try_direct_replay(c->schedule, *c->costs, link, options).has_value()) << "a timeline";
  options.record_timeline = false;
  options.link_sharing = LinkSharing::shared;
  EXPECT_FALSE(try_direct_replay(c->schedule, *c->costs, link, options).has_value()) << "shared links";
  options.link_sharing = LinkSharing::fifo;
  const Schedule lowered = schedules::lower(c->schedule);
  EXPECT_FALSE(try_direct_replay(lowered, *c->costs, link, options).has_value()) << "comm actions";
  // Overlapped pairs run concurrently only in the graph replay; in turn, here too.
  std::optional<Case> v = planned(planner, "dualpipev", RecomputePolicy::never, 2, 4, 8);
  ASSERT_TRUE(v.has_value());
  ASSERT_FALSE(v->schedule.overlapped.empty());
  EXPECT_TRUE(try_direct_replay(v->schedule, *v->costs, link, options).has_value());
  options.overlap_share = 0.7;
  EXPECT_FALSE(try_direct_replay(v->schedule, *v->costs, link, options).has_value()) << "concurrent pairs";
}

// A price for every kind the programs hold, each its own, so that a kind
// priced as another would show.
ActionOverheads every_kind_overhead() {
  return {{ActionKind::F, 1100},         {ActionKind::B, 1300},    {ActionKind::I, 700},
          {ActionKind::W, 500},          {ActionKind::R, 900},     {ActionKind::STEP, 2100},
          {ActionKind::REDUCE_GRAD, 310}, {ActionKind::WAIT_REDUCE_GRAD, 430}};
}

// D = 2 over a link slow enough that the reductions (in buckets, several per
// stage) outlast the drain, and ZeRO's gathers lengthen every pass.
DataParallelism replica_pair(int zero) {
  return {.degree = 2, .zero = zero, .link = {.latency_us = 1.5, .bandwidth_GBps = 0.2}, .bucket_bytes = 1500};
}

// What simulate() gives for the metrics alone, and the graph replay's (a
// recorded timeline takes it), for the same model.
void expect_direct_equals_graph(const Schedule& schedule, const CostModel& costs, const LinkModel& link,
                                SimOptions options, const std::string& what) {
  options.record_timeline = false;
  const std::optional<SimResult> direct = try_direct_replay(schedule, costs, link, options);
  ASSERT_TRUE(direct.has_value()) << what;
  const SimResult simulated = simulate(schedule, costs, link, options);
  options.record_timeline = true;
  const SimResult graph = simulate(schedule, costs, link, options);
  EXPECT_EQ(direct->metrics, graph.metrics) << what;
  EXPECT_EQ(simulated.metrics, graph.metrics) << what;
}

TEST_F(DirectReplayTest, RepricedCostsTakeItAndEqualTheGraphReplay) {
  const DistinctLinksWithLatency distinct;
  int checked = 0;
  for (const std::string& family : schedules::schedule_names()) {
    for (const auto policy : {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
      for (const int k : {1, 2, 4}) {
        for (const int m : {1, 3, 8}) {
          const std::int64_t n = 3 * m - 1;
          std::optional<Case> c = planned(planner, family, policy, k, m, n);
          if (!c) continue;
          const std::string what = family + " " + std::string(to_string(policy)) + " K=" + std::to_string(k) +
                                   " M=" + std::to_string(m);
          SimOptions options;
          options.batch_size = n;
          options.static_bytes.assign(static_cast<std::size_t>(k), 77);
          const OverheadCosts overhead(*c->costs, every_kind_overhead());
          expect_direct_equals_graph(c->schedule, overhead, distinct, options, what + " overheads");
          std::vector<std::int64_t> gradient_bytes;
          for (int st = 0; st < c->schedule.num_stages; ++st) gradient_bytes.push_back(4000 + 1700 * st);
          Schedule replicated = c->schedule;
          replicated.data_parallel = 2;
          for (const int zero : {0, 1, 2, 3}) {
            const std::string with = what + " ZeRO " + std::to_string(zero);
            const DataParallelCosts dp(*c->costs, replica_pair(zero), gradient_bytes);
            expect_direct_equals_graph(replicated, dp, distinct, options, with);
            const OverheadCosts both(dp, every_kind_overhead());
            expect_direct_equals_graph(replicated, both, link, options, with + " overheads");
            // Every reduction after the rank's last backward (Megatron without
            // --overlap-grad-reduce): both replays place them alike.
            Schedule after = replicated;
            after.reduce_after_backward = true;
            expect_direct_equals_graph(after, dp, distinct, options, with + " after the backward");
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
}

TEST_F(DirectReplayTest, ModelsThatPriceEachActionStayOnTheGraphReplay) {
  std::optional<Case> c = planned(planner, "1f1b", RecomputePolicy::never, 2, 4, 8);
  ASSERT_TRUE(c.has_value());
  SimOptions options;
  options.record_timeline = false;
  const JitteredCosts jittered(*c->costs, 0.1, 7);
  EXPECT_FALSE(jittered.stage_prices().has_value());
  EXPECT_FALSE(try_direct_replay(c->schedule, jittered, link, options).has_value()) << "jitter";
  const ContendedCosts contended(*c->costs, {{action_key(schedules::make_action(0, ActionKind::F, 0)), 1.5}});
  EXPECT_FALSE(contended.stage_prices().has_value());
  EXPECT_FALSE(try_direct_replay(c->schedule, contended, link, options).has_value()) << "contention";
  // Wrapped in a repricing that keeps to the classes, it is still per action.
  const OverheadCosts over_jitter(jittered, every_kind_overhead());
  EXPECT_FALSE(try_direct_replay(c->schedule, over_jitter, link, options).has_value()) << "jitter inside";
  // Classes that miss a micro-batch: the graph replay asks the model, which refuses.
  const ProfileCosts short_costs(profile, std::vector<int>{6, 6}, {3, 3, 3});
  EXPECT_FALSE(try_direct_replay(c->schedule, short_costs, link, options).has_value()) << "3 of 4 micro-batches";
}

TEST_F(DirectReplayTest, ATiedEmbeddingsExchangeStaysOnTheGraphReplay) {
  std::optional<Case> c = planned(planner, "1f1b", RecomputePolicy::never, 2, 4, 8);
  ASSERT_TRUE(c.has_value());
  SimOptions options;
  options.record_timeline = false;
  c->schedule.data_parallel = 2;
  const DataParallelCosts dp(*c->costs, replica_pair(0), {5000, 6000});
  EXPECT_TRUE(try_direct_replay(c->schedule, dp, link, options).has_value());
  c->schedule.tied_embedding = true;
  EXPECT_FALSE(try_direct_replay(c->schedule, dp, link, options).has_value()) << "tied";
  // One stage exchanges nothing: its reductions are data parallelism's alone.
  std::optional<Case> one = planned(planner, "1f1b", RecomputePolicy::never, 1, 4, 8);
  ASSERT_TRUE(one.has_value());
  one->schedule.data_parallel = 2;
  one->schedule.tied_embedding = true;
  const DataParallelCosts dp_one(*one->costs, replica_pair(0), {11000});
  expect_direct_equals_graph(one->schedule, dp_one, link, options, "tied, one stage");
}

TEST_F(DirectReplayTest, AStallNamesTheFirstRankThatWaits) {
  std::optional<Case> c = planned(planner, "gpipe", RecomputePolicy::never, 2, 2, 4);
  ASSERT_TRUE(c.has_value());
  // Without F(0,1), rank 1 waits at F(1,1) for an activation that never
  // comes, and rank 0 at B(0,1) for the gradient that would follow it. (The
  // graph replay needs a valid schedule; simulate() validates one.)
  auto& rank0 = c->schedule.ranks[0];
  rank0.erase(std::find(rank0.begin(), rank0.end(), schedules::make_action(0, schedules::ActionKind::F, 1)));
  SimOptions options;
  options.record_timeline = false;
  try {
    (void)try_direct_replay(c->schedule, *c->costs, link, options);
    ADD_FAILURE() << "no stall";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "simulation stalled: rank 0 waits at 0B1");
  }
  options.validate = true;
  EXPECT_THROW((void)simulate(c->schedule, *c->costs, link, options), InputError);
}

}  // namespace
}  // namespace gpipe::sim
