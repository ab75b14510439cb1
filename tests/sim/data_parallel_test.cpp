// Data parallelism in the engine (sim/data_parallel.hpp): each stage's
// gradient reduction runs on its rank's reduce stream from its REDUCE_GRAD,
// the STEP waits for it, and ZeRO shards the step and adds its gathers.
// Hand-computed, to the ns, in the graph replay and in the direct one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "sim/data_parallel.hpp"
#include "sim/direct_replay.hpp"
#include "sim/engine.hpp"
#include "tests/error_of.hpp"
#include "tests/sim/uniform_stage_costs.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;
using schedules::Stage;
using timelines::Stream;

using ReplicaCosts = testing::UniformStageCosts;

Schedule replicated_schedule(const char* name, int ranks, int microbatches, int data_parallel) {
  schedules::ScheduleOptions o;
  o.num_ranks = ranks;
  o.num_microbatches = microbatches;
  Schedule s = schedules::generate(name, o);
  s.data_parallel = data_parallel;
  return s;
}

const timelines::TimedAction& reduce_action_at(const timelines::Timeline& t, const std::string& text, Stream stream) {
  const Action a = schedules::parse_action(text);
  const auto it = std::find_if(t.actions.begin(), t.actions.end(), [&](const timelines::TimedAction& x) {
    return x.action == a && x.stream == stream;
  });
  if (it == t.actions.end()) throw std::runtime_error("no " + text);
  return *it;
}

// 1 us latency, 1 GB/s: a message of 1000 bytes takes 2000 ns. Over the
// data-parallel pair, 4000 bytes of gradient a stage: a ring all-reduce
// 2 (1 + 4000 / 2 / 1000) us = 6000 ns (the tree: 10000), a reduce-scatter
// or all-gather 3000 ns.
const UniformLink kLink(1.0, 1.0);
DataParallelism data_parallel_pair(int zero) { return {.degree = 2, .zero = zero, .link = {.latency_us = 1, .bandwidth_GBps = 1}}; }

// GPipe, K = 2, M = 1. Rank 1: F [3000, 4000], B [4000, 6000], its reduction
// [6000, 12000], STEP [12000, 12300]; rank 0: B [8000, 10000], reduction
// [10000, 16000], STEP [16000, 16300]: 16300 ns, the tail 6000 more than one replica.
TEST(DataParallelSim, TheStepWaitsForItsStagesReduction) {
  const ReplicaCosts base;
  const DataParallelCosts costs(base, data_parallel_pair(0), {4000, 4000});
  EXPECT_EQ(costs.gradient_reduction_ns(Stage{0}), 6000);
  for (const LinkSharing sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    SimOptions options;
    options.link_sharing = sharing;
    const SimResult r = simulate(replicated_schedule("gpipe", 2, 1, 2), costs, kLink, options);
    const std::string what(to_string(sharing));
    EXPECT_EQ(r.metrics.step_time_ns, 16300) << what;
    const auto& reduce1 = reduce_action_at(r.timeline, "1REDUCE_GRAD", Stream::reduce);
    EXPECT_EQ(reduce1.start_ns, 6000) << what;
    EXPECT_EQ(reduce1.end_ns, 12000) << what;
    EXPECT_EQ(reduce1.rank.value, 1) << what;
    const auto& reduce0 = reduce_action_at(r.timeline, "0REDUCE_GRAD", Stream::reduce);
    EXPECT_EQ(reduce0.start_ns, 10000) << what;
    EXPECT_EQ(reduce0.end_ns, 16000) << what;
    EXPECT_EQ(reduce_action_at(r.timeline, "1STEP", Stream::compute).start_ns, 12000) << what;
    EXPECT_EQ(reduce_action_at(r.timeline, "0STEP", Stream::compute).end_ns, 16300) << what;
    // One replica: 10300 ns, nothing on a reduce stream.
    const SimResult one = simulate(replicated_schedule("gpipe", 2, 1, 1), base, kLink, options);
    EXPECT_EQ(one.metrics.step_time_ns, 10300) << what;
    EXPECT_TRUE(std::none_of(one.timeline.actions.begin(), one.timeline.actions.end(),
                             [](const auto& a) { return a.stream == Stream::reduce; }))
        << what;
  }
}

// ZeRO 1: a reduce-scatter (3000 ns), then STEP ceil(300 / 2) = 150 and the
// weights' all-gather 3000: rank 1 reduces [6000, 9000], steps [9000, 12150];
// rank 0 reduces [10000, 13000], steps [13000, 16150].
TEST(DataParallelSim, ZeroOneScattersAndGathers) {
  const ReplicaCosts base;
  const DataParallelCosts costs(base, data_parallel_pair(1), {4000, 4000});
  const SimResult r = simulate(replicated_schedule("gpipe", 2, 1, 2), costs, kLink, {});
  EXPECT_EQ(r.metrics.step_time_ns, 16150);
  EXPECT_EQ(reduce_action_at(r.timeline, "1REDUCE_GRAD", Stream::reduce).end_ns, 9000);
  EXPECT_EQ(reduce_action_at(r.timeline, "1STEP", Stream::compute).end_ns, 12150);
}

// --overlap-param-gather: the gather (3000) beside the next step's first
// forward of the stage (1000): STEP 150 + 2000, rank 1 steps [9000, 11150],
// rank 0 [13000, 15150]. A gather shorter than the forward shows nothing.
TEST(DataParallelSim, AnOverlappedParamGatherShowsWhatOutlastsTheNextForward) {
  const ReplicaCosts base;
  DataParallelism dp = data_parallel_pair(1);
  dp.overlap_param_gather = true;
  const DataParallelCosts costs(base, dp, {4000, 4000});
  const SimResult r = simulate(replicated_schedule("gpipe", 2, 1, 2), costs, kLink, {});
  EXPECT_EQ(r.metrics.step_time_ns, 15150);
  EXPECT_EQ(reduce_action_at(r.timeline, "1STEP", Stream::compute).end_ns, 11150);
  dp.link = {.latency_us = 0, .bandwidth_GBps = 4};  // the gather 4000 / 2 / 4 = 500 ns
  const DataParallelCosts fast(base, dp, {4000, 4000});
  EXPECT_EQ(fast.duration_ns(schedules::parse_action("1STEP")), 150);
}

// ZeRO 1 with the profile's own reduce-scatter fit (2 us a step, 1 GB/s) and
// all-gather fit (no latency, 2 GB/s): the reduce-scatter 2000 + 4000 / 2 =
// 4000 ns, the gather 4000 / (2 x 2) = 1000: rank 1 reduces [6000, 10000],
// steps [10000, 11150]; rank 0 reduces [10000, 14000], steps [14000, 15150].
TEST(DataParallelSim, EachCollectiveTakesItsOwnFit) {
  const ReplicaCosts base;
  DataParallelism dp = data_parallel_pair(1);
  dp.reduce_scatter_link = profiles::CollectiveLink{.latency_us = 2, .bandwidth_GBps = 1};
  dp.all_gather_link = profiles::CollectiveLink{.latency_us = 0, .bandwidth_GBps = 2};
  const DataParallelCosts costs(base, dp, {4000, 4000});
  const SimResult r = simulate(replicated_schedule("gpipe", 2, 1, 2), costs, kLink, {});
  EXPECT_EQ(r.metrics.step_time_ns, 15150);
  EXPECT_EQ(reduce_action_at(r.timeline, "1REDUCE_GRAD", Stream::reduce).end_ns, 10000);
  EXPECT_EQ(reduce_action_at(r.timeline, "1STEP", Stream::compute).end_ns, 11150);
  // The all-reduce keeps the group's link: ZeRO 0 is unchanged by the others' fits.
  dp.zero = 0;
  EXPECT_EQ(bucketed_reduction_ns(dp, 4000), bucketed_reduction_ns(data_parallel_pair(0), 4000));
}

// fp32 main gradients of a 16-bit model (gradient_widening 2): each
// reduction carries twice G_s, the weights' gathers G_s.
TEST(DataParallelSim, Fp32MainGradientsReduceTwiceTheBytes) {
  const ReplicaCosts base;
  for (const int zero : {0, 1}) {
    DataParallelism wide = data_parallel_pair(zero);
    wide.gradient_widening = 2;
    const DataParallelCosts widened(base, wide, {4000, 4000});
    const DataParallelCosts doubled(base, data_parallel_pair(zero), {8000, 8000});
    const DataParallelCosts plain(base, data_parallel_pair(zero), {4000, 4000});
    EXPECT_EQ(widened.gradient_reduction_ns(Stage{0}), doubled.gradient_reduction_ns(Stage{0})) << zero;
    EXPECT_EQ(widened.gradient_reduction_ns(Stage{1}), zero == 0 ? 10000 : 5000) << zero;  // 2 (1 + 4) us; 1 + 4 us
    if (zero > 0) EXPECT_EQ(widened.weight_gather_ns(Stage{0}), plain.weight_gather_ns(Stage{0}));
  }
}

// A tied embedding's ends over replicas: once the other end's copy of the
// 2000-byte gradient has arrived, WAIT_REDUCE_GRAD sums it over the pair, an
// all-reduce of 2 (1 + 2000 / 2 / 1000) us = 4000 ns on the compute stream.
TEST(DataParallelSim, ATiedEndSumsTheOtherEndsCopyOverTheReplicas) {
  const ReplicaCosts base(2000);
  const DataParallelCosts costs(base, data_parallel_pair(0), {4000, 4000});
  EXPECT_EQ(costs.duration_ns(schedules::parse_action("0WAIT_REDUCE_GRAD")), 4000);
  EXPECT_EQ(costs.duration_ns(schedules::parse_action("1WAIT_REDUCE_GRAD")), 4000);
  Schedule tied = replicated_schedule("gpipe", 2, 1, 2);
  tied.tied_embedding = true;
  const SimResult r = simulate(tied, costs, kLink, {});
  const auto& wait = reduce_action_at(r.timeline, "0WAIT_REDUCE_GRAD", Stream::compute);
  EXPECT_EQ(wait.end_ns - wait.start_ns, 4000);
  // Without replicas there is nothing to sum; nor on one stage, which holds
  // both ends and receives no copy.
  const DataParallelCosts one(base, {.degree = 1, .link = {.latency_us = 1, .bandwidth_GBps = 1}}, {4000, 4000});
  EXPECT_EQ(one.duration_ns(schedules::parse_action("0WAIT_REDUCE_GRAD")), 0);
  const DataParallelCosts single(base, data_parallel_pair(0), {4000});
  EXPECT_EQ(single.duration_ns(schedules::parse_action("0WAIT_REDUCE_GRAD")), 0);
}

// ZeRO 3: F and B each gather the weights first (3000 ns): F 4000, B 5000,
// STEP 150. Rank 0: F [0, 4000]; rank 1: F [6000, 10000], B [10000, 15000],
// reduces [15000, 18000]; rank 0: B [17000, 22000], reduces [22000, 25000],
// STEP [25000, 25150].
TEST(DataParallelSim, ZeroThreeGathersTheWeightsBeforeEachPass) {
  const ReplicaCosts base;
  const DataParallelCosts costs(base, data_parallel_pair(3), {4000, 4000});
  const SimResult r = simulate(replicated_schedule("gpipe", 2, 1, 2), costs, kLink, {});
  EXPECT_EQ(r.metrics.step_time_ns, 25150);
  EXPECT_EQ(reduce_action_at(r.timeline, "1REDUCE_GRAD", Stream::reduce).start_ns, 15000);
  EXPECT_EQ(reduce_action_at(r.timeline, "0STEP", Stream::compute).start_ns, 25000);
}

// A stage's reduction starts right after its last backward, while its rank
// computes on: ZBV, K = 2, rank 0 holds stages 0 and 3; stage 3 is done first.
TEST(DataParallelSim, ReductionOverlapsTheRanksOtherStage) {
  const ReplicaCosts base;
  const DataParallelCosts costs(base, data_parallel_pair(0), {4000, 4000, 4000, 4000});
  const SimResult r = simulate(replicated_schedule("zbv", 2, 2, 2), costs, kLink, {});
  const auto& reduce3 = reduce_action_at(r.timeline, "3REDUCE_GRAD", Stream::reduce);
  const auto& last_of_0 = reduce_action_at(r.timeline, "0W1", Stream::compute);
  EXPECT_LT(reduce3.start_ns, last_of_0.start_ns);
  EXPECT_EQ(reduce3.end_ns - reduce3.start_ns, 6000);
  // The rank's two reductions run one after another on its reduce stream.
  const auto& reduce0 = reduce_action_at(r.timeline, "0REDUCE_GRAD", Stream::reduce);
  EXPECT_GE(reduce0.start_ns, reduce3.end_ns);
  EXPECT_EQ(reduce0.start_ns, std::max(last_of_0.end_ns, reduce3.end_ns));
}

// The same costs with a price table, every micro-batch of one class (as
// they are): the direct replay takes them, and the repricing on top of them.
class AlikeCosts final : public RepricedCosts {
 public:
  AlikeCosts(const CostModel& base, int stages, int microbatches)
      : RepricedCosts(base), stages_(static_cast<std::size_t>(stages)),
        microbatches_(static_cast<std::size_t>(microbatches)) {}
  std::int64_t duration_ns(const schedules::Action& a) const override { return base().duration_ns(a); }
  std::optional<StagePrices> stage_prices() const override {
    return priced_by(*this, std::vector<std::uint32_t>(microbatches_, 0), stages_);
  }

 private:
  std::size_t stages_;
  std::size_t microbatches_;
};

// The direct replay, which simulate() takes for the metrics alone, times the
// reductions as the graph replay does: the steps computed above.
TEST(DataParallelSim, TheDirectReplayTimesTheReductionsAlike) {
  const ReplicaCosts uniform;
  const AlikeCosts base(uniform, 2, 1);
  SimOptions metrics_only;
  metrics_only.record_timeline = false;
  const Schedule gpipe = replicated_schedule("gpipe", 2, 1, 2);
  struct Expected {
    int zero;
    std::int64_t step_ns;
  };
  for (const Expected e : {Expected{0, 16300}, Expected{1, 16150}, Expected{3, 25150}}) {
    const DataParallelCosts costs(base, data_parallel_pair(e.zero), {4000, 4000});
    const std::optional<SimResult> direct = try_direct_replay(gpipe, costs, kLink, metrics_only);
    ASSERT_TRUE(direct.has_value()) << "ZeRO " << e.zero;
    EXPECT_EQ(direct->metrics.step_time_ns, e.step_ns) << "ZeRO " << e.zero;
    EXPECT_EQ(simulate(gpipe, costs, kLink, metrics_only).metrics, simulate(gpipe, costs, kLink, {}).metrics);
  }
  // Two stages a rank, the one done first reducing while the other computes.
  const AlikeCosts two(uniform, 4, 2);
  const DataParallelCosts costs(two, data_parallel_pair(0), {4000, 4000, 4000, 4000});
  const Schedule zbv = replicated_schedule("zbv", 2, 2, 2);
  ASSERT_TRUE(try_direct_replay(zbv, costs, kLink, metrics_only).has_value());
  EXPECT_EQ(simulate(zbv, costs, kLink, metrics_only).metrics, simulate(zbv, costs, kLink, {}).metrics);
}

TEST(DataParallelSim, BucketsEachPayTheirLatency) {
  // 10000 bytes in buckets of 4000: two full all-reduces of 4000 (6000 ns
  // each) and one of 2000 (2 (1 + 1) = 4000 ns).
  DataParallelism dp = data_parallel_pair(0);
  dp.bucket_bytes = 4000;
  EXPECT_EQ(bucketed_reduction_ns(dp, 10000), 16000);
  dp.bucket_bytes = 10000;
  EXPECT_EQ(bucketed_reduction_ns(dp, 10000), 2 * (1000 + 5000));
}

TEST(DataParallelSim, TheReductionsAreInTheTrace) {
  const ReplicaCosts base;
  const DataParallelCosts costs(base, data_parallel_pair(0), {4000, 4000});
  const SimResult r = simulate(replicated_schedule("1f1b", 2, 4, 2), costs, kLink, {});
  const timelines::Timeline back =
      timelines::timeline_from_chrome_trace(timelines::to_chrome_trace(r.timeline), "trace");
  EXPECT_EQ(reduce_action_at(back, "0REDUCE_GRAD", Stream::reduce).end_ns, reduce_action_at(r.timeline, "0REDUCE_GRAD", Stream::reduce).end_ns);
}

TEST(DataParallelSim, ImpossibleGroupsAreOneLine) {
  const ReplicaCosts base;
  using gpipe::testing::error_of;
  EXPECT_EQ(error_of([&] { DataParallelCosts(base, {.degree = 0}, {}); }), "--data-parallel 0: give 1 or more replicas");
  EXPECT_EQ(error_of([&] { DataParallelCosts(base, {.degree = 2, .zero = 4}, {}); }),
            "--zero 4: ZeRO's stages are 0, 1, 2 and 3");
  EXPECT_EQ(error_of([&] { DataParallelCosts(base, {.degree = 1, .zero = 2}, {}); }),
            "--zero 2 shards over the data-parallel group: give --data-parallel 2 or more");
}

}  // namespace
}  // namespace gpipe::sim
