// Data parallelism's gradient reductions in the IR
// (schedules/gradient_reduction.hpp): every stage's REDUCE_GRAD right after
// its last backward, its WAIT_REDUCE_GRAD before the STEPs; each wait needs
// its own stage's REDUCE_GRAD; validation wants them in a lowered schedule;
// the IR JSON keeps the degree.
#include <gtest/gtest.h>

#include <algorithm>

#include "schedules/dependencies.hpp"
#include "schedules/generate.hpp"
#include "schedules/gradient_reduction.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "tests/error_of.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using gpipe::testing::error_of;
using testing::program;

Schedule replicated_generated(const char* name, int ranks, int microbatches, int data_parallel = 2) {
  ScheduleOptions o;
  o.num_ranks = ranks;
  o.num_microbatches = microbatches;
  Schedule s = generate(name, o);
  s.data_parallel = data_parallel;
  return s;
}

TEST(GradientReduction, EveryStageReducesAfterItsLastBackward) {
  const Schedule s = lower(replicated_generated("1f1b", 3, 2));
  EXPECT_EQ(program(s, 1), "1RECV_F0 1F0 1SEND_F0 1RECV_F1 1F1 1SEND_F1 1RECV_B0 1B0 1SEND_B0 1RECV_B1 1B1 "
                           "1SEND_B1 1REDUCE_GRAD 1WAIT_REDUCE_GRAD 1STEP");
  for (int st = 0; st < 3; ++st) EXPECT_TRUE(reduces_gradients(s, Stage{st}));
  validate(s);
  // One replica reduces nothing.
  const Schedule one = lower(replicated_generated("1f1b", 3, 2, 1));
  EXPECT_EQ(program(one, 1).find("REDUCE_GRAD"), std::string::npos);
  EXPECT_FALSE(has_gradient_reductions(one));
}

// Interleaved 1F1B, K = 2, V = 2, M = 4, over 2 replicas: rank 0 holds stages 0 and 2.
Schedule replicated_interleaved() {
  ScheduleOptions o;
  o.num_ranks = 2;
  o.stages_per_rank = 2;
  o.num_microbatches = 4;
  Schedule s = generate("interleaved-1f1b", o);
  s.data_parallel = 2;
  return s;
}

TEST(GradientReduction, AnEarlierStagesReductionStartsBeforeTheRanksLaterWork) {
  // Interleaved 1F1B, K = 2, V = 2: rank 0 holds stages 0 and 2; stage 2's
  // backwards end first, and its reduction starts there.
  Schedule s = replicated_interleaved();
  const Schedule lowered = lower(s);
  const std::string p = program(lowered, 0);
  const auto reduce2 = p.find("2REDUCE_GRAD");
  const auto reduce0 = p.find("0REDUCE_GRAD");
  ASSERT_NE(reduce2, std::string::npos) << p;
  EXPECT_LT(reduce2, reduce0) << p;
  EXPECT_LT(reduce2, p.find("0B3")) << p;
  EXPECT_TRUE(p.ends_with("0REDUCE_GRAD 0WAIT_REDUCE_GRAD 2WAIT_REDUCE_GRAD 0STEP 2STEP")) << p;
  validate(lowered);
}

// Megatron-LM without --overlap-grad-reduce: the same schedule with every
// reduction after the rank's last backward, in the order the stages' backwards
// ended (stage 2 before 0), so none runs under a backward. The IR keeps it.
TEST(GradientReduction, AfterBackwardStartsEveryReductionAfterTheRanksLastBackward) {
  Schedule s = replicated_interleaved();
  s.reduce_after_backward = true;
  const Schedule lowered = lower(s);
  const std::string p = program(lowered, 0);
  EXPECT_TRUE(p.ends_with("0B3 2REDUCE_GRAD 0REDUCE_GRAD 0WAIT_REDUCE_GRAD 2WAIT_REDUCE_GRAD 0STEP 2STEP")) << p;
  validate(lowered);
  EXPECT_TRUE(schedule_from_json(to_json(lowered), "test").reduce_after_backward);
  EXPECT_FALSE(schedule_from_json(to_json(lower(replicated_generated("1f1b", 2, 2))), "test").reduce_after_backward);
}

TEST(GradientReduction, EachWaitNeedsItsOwnReduction) {
  const Schedule s = lower(replicated_generated("gpipe", 2, 2));
  const Dependencies deps(s);
  EXPECT_EQ(deps.of(parse_action("0WAIT_REDUCE_GRAD")), std::vector<Action>{parse_action("0REDUCE_GRAD")});
  EXPECT_EQ(deps.of(parse_action("1REDUCE_GRAD")), (std::vector<Action>{parse_action("1B0"), parse_action("1B1")}));
  // With a tied embedding too, the wait needs both.
  Schedule tied = replicated_generated("gpipe", 2, 2);
  tied.tied_embedding = true;
  const Schedule both = lower(tied);
  EXPECT_EQ(Dependencies(both).of(parse_action("0WAIT_REDUCE_GRAD")),
            (std::vector<Action>{parse_action("0REDUCE_GRAD"), parse_action("1REDUCE_GRAD")}));
}

TEST(GradientReduction, ALoweredScheduleMustHoldTheReductions) {
  Schedule s = lower(replicated_generated("gpipe", 2, 1, 4));
  auto& rank0 = s.ranks[0];
  rank0.erase(std::find(rank0.begin(), rank0.end(), parse_action("0REDUCE_GRAD")));
  EXPECT_EQ(error_of([&] { validate(s); }),
            "rank 0: missing 0REDUCE_GRAD (the schedule is lowered and its gradients are reduced over 4 replicas)");
}

TEST(GradientReduction, TheIrJsonKeepsTheDegree) {
  const Schedule s = lower(replicated_generated("1f1b", 2, 2, 8));
  EXPECT_EQ(to_json(s).at("data_parallel"), 8);
  const Schedule back = schedule_from_json(to_json(s), "test");
  EXPECT_EQ(back, s);
  EXPECT_EQ(schedule_from_json(nlohmann::json::parse(to_json_text(s)), "text"), s);
  EXPECT_FALSE(to_json(lower(replicated_generated("1f1b", 2, 2, 1))).contains("data_parallel"));
  nlohmann::json bad = to_json(s);
  bad["data_parallel"] = 0;
  EXPECT_EQ(error_of([&] { (void)schedule_from_json(bad, "f.json"); }),
            "f.json: data_parallel: expected an integer from 1 to 1000000");
}

}  // namespace
}  // namespace gpipe::schedules
