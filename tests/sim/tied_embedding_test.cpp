// A tied embedding's gradient exchange in the engine (schedules/tied_gradient.hpp):
// REDUCE_GRAD and WAIT_REDUCE_GRAD take no time, and a stage's wait ends when
// the other end's gradient has crossed its own link. Hand-computed, to the ns.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "schedules/generate.hpp"
#include "sim/engine.hpp"
#include "tests/sim/uniform_stage_costs.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;
using schedules::Stage;

// Every stage alike (uniform_stage_costs.hpp); the first and the last stage
// exchange 4000 bytes of gradient.
constexpr std::int64_t kTiedBytes = 4000;

Schedule tied_schedule(const char* name, int ranks, int microbatches, bool tied = true) {
  schedules::ScheduleOptions o;
  o.num_ranks = ranks;
  o.num_microbatches = microbatches;
  Schedule s = schedules::generate(name, o);
  s.tied_embedding = tied;
  return s;
}

const timelines::TimedAction& tied_action_at(const timelines::Timeline& t, const std::string& text) {
  const Action a = schedules::parse_action(text);
  const auto it = std::find_if(t.actions.begin(), t.actions.end(),
                               [&](const timelines::TimedAction& x) { return x.action == a; });
  if (it == t.actions.end()) throw std::runtime_error("no " + text);
  return *it;
}

// 1 us latency, 1 GB/s: 1000 bytes take 2000 ns, the tied 4000 bytes 5000 ns.
const UniformLink kTiedLink(1.0, 1.0);

// GPipe, K = 2, M = 1. Rank 0: F [0, 1000]; its activation arrives at 3000;
// rank 1: F [3000, 4000], B [4000, 6000], REDUCE_GRAD at 6000; the gradient
// arrives at 8000; rank 0: B [8000, 10000], REDUCE_GRAD at 10000. Rank 0's
// wait ends at 6000 + 5000 = 11000, STEP [11000, 11300]; rank 1's at
// 10000 + 5000, STEP [15000, 15300]: the step takes 15300 ns, 5000 more than
// untied.
TEST(TiedEmbeddingSim, TheStepWaitsForTheOtherEndsGradient) {
  const testing::UniformStageCosts costs(kTiedBytes);
  for (const LinkSharing sharing : {LinkSharing::fifo, LinkSharing::shared}) {
    SimOptions options;
    options.link_sharing = sharing;
    const SimResult tied = simulate(tied_schedule("gpipe", 2, 1), costs, kTiedLink, options);
    const std::string what(to_string(sharing));
    EXPECT_EQ(tied.metrics.step_time_ns, 15300) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "0REDUCE_GRAD").start_ns, 10000) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "1REDUCE_GRAD").start_ns, 6000) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "0WAIT_REDUCE_GRAD").start_ns, 11000) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "1WAIT_REDUCE_GRAD").start_ns, 15000) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "0STEP").start_ns, 11000) << what;
    EXPECT_EQ(tied_action_at(tied.timeline, "1STEP").end_ns, 15300) << what;
    // The exchange is on the compute stream, framed by the two actions: no
    // SEND or RECV of its own, as in a measured timeline.
    EXPECT_EQ(tied_action_at(tied.timeline, "1WAIT_REDUCE_GRAD").stream, timelines::Stream::compute) << what;
    EXPECT_EQ(tied.timeline.actions.size(), 4u + 2u * 2u + 2u * 3u) << what;  // 2 messages, 3 actions a rank
    // The running totals a sweep keeps give the same metrics.
    SimOptions quiet = options;
    quiet.record_timeline = false;
    EXPECT_EQ(simulate(tied_schedule("gpipe", 2, 1), costs, kTiedLink, quiet).metrics, tied.metrics) << what;
    EXPECT_EQ(tied.metrics, timelines::compute_metrics(tied.timeline)) << what;

    const SimResult untied = simulate(tied_schedule("gpipe", 2, 1, false), costs, kTiedLink, options);
    EXPECT_EQ(untied.metrics.step_time_ns, 10300) << what;
  }
}

// 1F1B, K = 3, M = 2: the ends are ranks 0 and 2, not neighbours; the tied
// gradient takes a link of its own. Rank 2's wait ends 5000 ns after rank
// 0's REDUCE_GRAD, and rank 1, which ties nothing, steps as it would untied.
TEST(TiedEmbeddingSim, TheEndsNeedNotBeNeighbours) {
  const testing::UniformStageCosts costs(kTiedBytes);
  const SimResult tied = simulate(tied_schedule("1f1b", 3, 2), costs, kTiedLink);
  const SimResult untied = simulate(tied_schedule("1f1b", 3, 2, false), costs, kTiedLink);
  const std::int64_t first_posted = tied_action_at(tied.timeline, "0REDUCE_GRAD").start_ns;
  const std::int64_t last_posted = tied_action_at(tied.timeline, "2REDUCE_GRAD").start_ns;
  EXPECT_EQ(first_posted, tied_action_at(untied.timeline, "0STEP").start_ns);
  EXPECT_EQ(tied_action_at(tied.timeline, "2WAIT_REDUCE_GRAD").start_ns, std::max(last_posted, first_posted + 5000));
  EXPECT_EQ(tied_action_at(tied.timeline, "0WAIT_REDUCE_GRAD").start_ns, std::max(first_posted, last_posted + 5000));
  EXPECT_EQ(tied_action_at(tied.timeline, "1STEP").start_ns, tied_action_at(untied.timeline, "1STEP").start_ns);
  EXPECT_EQ(tied.metrics.step_time_ns, std::max(first_posted, last_posted) + 5000 + 300);
}

// ZBV puts stage 0 and the last stage on rank 0: the exchange is local and
// free, and the step takes what it takes untied.
TEST(TiedEmbeddingSim, EndsOnOneRankExchangeForFree) {
  const testing::UniformStageCosts costs(kTiedBytes);
  const SimResult tied = simulate(tied_schedule("zbv", 2, 4), costs, kTiedLink);
  const SimResult untied = simulate(tied_schedule("zbv", 2, 4, false), costs, kTiedLink);
  EXPECT_EQ(tied.metrics.step_time_ns, untied.metrics.step_time_ns);
  EXPECT_EQ(tied_action_at(tied.timeline, "3WAIT_REDUCE_GRAD").start_ns, tied_action_at(tied.timeline, "0REDUCE_GRAD").start_ns);
}

}  // namespace
}  // namespace gpipe::sim
