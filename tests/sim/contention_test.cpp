// Contention between ranks that compute at once (sim/contention.hpp): the
// slowdown curve, the busy peers of each action of a timeline (exact, in
// integer ns), and the replays: one rank, or no points, leave every time as
// the profile has it; two ranks that compute side by side stretch by the
// slowdown, and only where they overlap.
#include "sim/contention.hpp"

#include <gtest/gtest.h>

#include "schedules/generate.hpp"
#include "sim/link_model.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Rank;
using schedules::Stage;
using timelines::Stream;

// Every F takes 1000 ns, every B 2000 ns, the optimizer step nothing; no bytes.
class FixedCosts final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& action) const override {
    return action.kind == ActionKind::F ? 1000 : action.kind == ActionKind::B ? 2000 : 0;
  }
  std::int64_t boundary_bytes(Stage, Microbatch) const override { return 0; }
  std::int64_t activation_bytes(Stage, Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(Stage, Microbatch) const override { return 0; }
};

schedules::Schedule gpipe(int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return schedules::generate_gpipe(o);
}

TEST(Contention, SlowdownIsLinearThroughThePointsAndFlatPastTheLast) {
  const std::vector<profiles::ContentionPoint> points = {{1, 0.04}, {3, 0.10}};
  EXPECT_DOUBLE_EQ(contention_slowdown(points, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(contention_slowdown(points, 0.5), 0.02);
  EXPECT_DOUBLE_EQ(contention_slowdown(points, 1.0), 0.04);
  EXPECT_DOUBLE_EQ(contention_slowdown(points, 2.0), 0.07);
  EXPECT_DOUBLE_EQ(contention_slowdown(points, 7.0), 0.10);
  EXPECT_DOUBLE_EQ(contention_slowdown({}, 2.0), 0.0);
}

TEST(Contention, BusyPeersIsEachActionsOverlapWithTheOtherRanksCompute) {
  // Rank 0 computes [0, 100) and [100, 200); rank 1 [50, 150); rank 2
  // [0, 200) on its overlap stream (a concurrent pair's backward); sends
  // and receives never count.
  timelines::Timeline t;
  const auto add = [&t](int stage, ActionKind kind, int rank, Stream stream, std::int64_t start, std::int64_t end) {
    t.actions.push_back({Action{Stage{stage}, kind, Microbatch{0}}, Rank{rank}, stream, start, end});
  };
  add(0, ActionKind::F, 0, Stream::compute, 0, 100);
  add(0, ActionKind::B, 0, Stream::compute, 100, 200);
  add(1, ActionKind::F, 1, Stream::compute, 50, 150);
  add(2, ActionKind::B, 2, Stream::overlap, 0, 200);
  add(0, ActionKind::SEND_F, 0, Stream::send, 0, 200);
  const auto peers = busy_peers(t);
  ASSERT_EQ(peers.size(), 4U);
  EXPECT_DOUBLE_EQ(peers.at(action_key(Action{Stage{0}, ActionKind::F, Microbatch{0}})), 1.5);  // 50 of rank 1 + 100
  EXPECT_DOUBLE_EQ(peers.at(action_key(Action{Stage{0}, ActionKind::B, Microbatch{0}})), 1.5);
  EXPECT_DOUBLE_EQ(peers.at(action_key(Action{Stage{1}, ActionKind::F, Microbatch{0}})), 2.0);
  EXPECT_DOUBLE_EQ(peers.at(action_key(Action{Stage{2}, ActionKind::B, Microbatch{0}})), 1.5);  // 200 + 100 over 200
}

TEST(Contention, OneRankOrNoPointsKeepEveryTime) {
  const FixedCosts costs;
  const UniformLink link(0.0, 1e6);
  const std::vector<profiles::ContentionPoint> points = {{1, 0.5}};
  const schedules::Schedule one = gpipe(1, 4);
  EXPECT_EQ(simulate_with_contention(one, costs, link, {}, points).metrics.step_time_us,
            simulate(one, costs, link, {}).metrics.step_time_us);
  const schedules::Schedule two = gpipe(2, 4);
  EXPECT_EQ(simulate_with_contention(two, costs, link, {}, {}).metrics.step_time_us,
            simulate(two, costs, link, {}).metrics.step_time_us);
}

TEST(Contention, RanksThatComputeSideBySideStretchByTheSlowdown) {
  // gpipe K=2 M=2, F 1000 ns, B 2000 ns, a free link, 10 % at one peer.
  // Without contention: 0F0 [0,1000), 0F1 [1000,2000) beside 1F0 [1000,2000),
  // 1F1 [2000,3000), 1B1 [3000,5000), 1B0 [5000,7000) beside 0B1 [5000,7000),
  // 0B0 [7000,9000). The actions side by side (0F1, 1F0, 1B0, 0B1) each had
  // one peer throughout, so they take 1100 and 2200 ns, and stay side by
  // side: 0F0 [0,1000), 0F1 and 1F0 [1000,2100), 1F1 [2100,3100), 1B1
  // [3100,5100), 1B0 and 0B1 [5100,7300), 0B0 [7300,9300), and the
  // optimizer steps take no time: 9.3 us, however many replays.
  const FixedCosts costs;
  const UniformLink link(0.0, 1e6);
  const std::vector<profiles::ContentionPoint> points = {{1, 0.1}};
  const schedules::Schedule s = gpipe(2, 2);
  EXPECT_DOUBLE_EQ(simulate(s, costs, link, {}).metrics.step_time_us, 9.0);
  for (const int replays : {2, 4}) {
    SimOptions options;
    const SimResult r = simulate_with_contention(s, costs, link, options, points, replays);
    EXPECT_DOUBLE_EQ(r.metrics.step_time_us, 9.3) << replays << " replays";
    std::int64_t stretched = 0;
    for (const timelines::TimedAction& a : r.timeline.actions) {
      if (a.stream == Stream::compute && (a.duration_ns() == 1100 || a.duration_ns() == 2200)) ++stretched;
    }
    EXPECT_EQ(stretched, 4);
  }
  // Without a recorded timeline the result carries none, and the same metrics.
  SimOptions quiet;
  quiet.record_timeline = false;
  const SimResult r = simulate_with_contention(s, costs, link, quiet, points);
  EXPECT_TRUE(r.timeline.actions.empty());
  EXPECT_DOUBLE_EQ(r.metrics.step_time_us, 9.3);
}

}  // namespace
}  // namespace gpipe::sim
