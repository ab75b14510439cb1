// A fixed cost per action of some kinds (sim/action_overhead.hpp): parsed
// from --action-overhead-us, added exactly to what the profile prices, and
// every bad value one InputError naming the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "profiles/shipped.hpp"
#include "schedules/action.hpp"
#include "sim/action_overhead.hpp"
#include "sim/scenario.hpp"
#include "tests/error_of.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;

std::string overhead_error(const std::string& text) {
  return gpipe::testing::error_of([&] { (void)parse_action_overheads(text); });
}

TEST(ActionOverhead, ParsesKindsInMicrosecondsToNanoseconds) {
  const ActionOverheads o = parse_action_overheads("F=120,B=200.5,WAIT_SEND_F=0.001");
  EXPECT_EQ(o, (ActionOverheads{{ActionKind::F, 120'000}, {ActionKind::B, 200'500}, {ActionKind::WAIT_SEND_F, 1}}));
  EXPECT_EQ(to_string(o), "F=120 us, B=200.5 us, WAIT_SEND_F=0.001 us");
  EXPECT_EQ(overhead_error("F"), "--action-overhead-us: 'F' is not KIND=US (such as F=120)");
  EXPECT_EQ(overhead_error("SEND_F=3").rfind("--action-overhead-us: 'SEND_F' is not a kind of action on the compute stream", 0), 0U);
  EXPECT_EQ(overhead_error("Q=3").rfind("--action-overhead-us: 'Q' is not a kind", 0), 0U);
  EXPECT_EQ(overhead_error("F=-1"), "--action-overhead-us: F's '-1' is not a number of microseconds from 0 to 1e9");
  EXPECT_EQ(overhead_error("F=1x"), "--action-overhead-us: F's '1x' is not a number of microseconds from 0 to 1e9");
  EXPECT_EQ(overhead_error("F=nan"), "--action-overhead-us: F's 'nan' is not a number of microseconds from 0 to 1e9");
  EXPECT_EQ(overhead_error("F=1,F=2"), "--action-overhead-us: F is given twice");
}

profiles::Profile default_profile() {
  return profiles::load_profile(profiles::resolve_profile(profiles::kDefaultProfile));
}

// GPipe on 2 stages, M micro-batches of one sample.
Scenario gpipe_on_two_stages(int microbatches) {
  Scenario sc;
  sc.request.schedule = "gpipe";
  sc.request.stages = 2;
  sc.request.microbatches = microbatches;
  sc.request.batch = microbatches;
  return sc;
}

TEST(ActionOverhead, EachForwardOfAGpipeStepAddsItsCostToTheCriticalPath) {
  const profiles::Profile profile = default_profile();
  Scenario sc = gpipe_on_two_stages(4);
  const Prediction plain = predict(profile, sc);
  sc.conditions.action_overhead_ns = {{ActionKind::F, 7'000}};
  const Prediction slower = predict(profile, sc);
  // Every forward is 7 us longer and nothing else changes its duration. The
  // step grows by at least the M = 4 forwards of the slowest stage and at most
  // the M + K - 1 = 5 forwards on GPipe's longest path.
  for (const auto& a : slower.timeline.actions) {
    const auto it = std::ranges::find_if(plain.timeline.actions, [&](const auto& b) { return b.action == a.action; });
    ASSERT_NE(it, plain.timeline.actions.end()) << to_string(a.action);
    EXPECT_EQ(a.duration_ns(), it->duration_ns() + (a.action.kind == ActionKind::F ? 7'000 : 0)) << to_string(a.action);
  }
  EXPECT_GE(slower.metrics.step_time_ns - plain.metrics.step_time_ns, 4 * 7'000);
  EXPECT_LE(slower.metrics.step_time_ns - plain.metrics.step_time_ns, 5 * 7'000);
}

TEST(ActionOverhead, APerLayerCostIsChargedOnceForEachLayerOfTheActionsStage) {
  const profiles::Profile profile = default_profile();
  Scenario sc = gpipe_on_two_stages(2);
  const Prediction plain = predict(profile, sc);
  const std::vector<int> layers = plain.plan.partition.layers_per_stage;
  ASSERT_EQ(layers.size(), 2U);
  sc.conditions.action_overhead_ns = {{ActionKind::F, 1'000}};
  sc.conditions.action_overhead_per_layer_ns = {{ActionKind::B, 3'000}};
  const Prediction slower = predict(profile, sc);
  for (const auto& a : slower.timeline.actions) {
    const auto it = std::ranges::find_if(plain.timeline.actions, [&](const auto& b) { return b.action == a.action; });
    ASSERT_NE(it, plain.timeline.actions.end()) << to_string(a.action);
    const std::int64_t extra = a.action.kind == ActionKind::F   ? 1'000
                               : a.action.kind == ActionKind::B ? 3'000 * layers[a.action.stage.at()]
                                                                : 0;
    EXPECT_EQ(a.duration_ns(), it->duration_ns() + extra) << to_string(a.action);
  }
}

}  // namespace
}  // namespace gpipe::sim
