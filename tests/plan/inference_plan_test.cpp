// The inference plan (plan/inference_plan.hpp): the partition balances the
// forward costs alone, a rank holds its stage's weights only, and what cannot
// be is refused naming the flag.
#include <gtest/gtest.h>

#include "plan/inference_plan.hpp"
#include "plan/plan.hpp"
#include "tests/error_of.hpp"
#include "tests/test_profiles.hpp"

namespace gpipe::plan {
namespace {

using gpipe::testing::error_of;

// Four layers whose forwards are 1, 1, 1, 3 and whose backwards are 9, 1, 1, 1:
// training balances fwd + bwd (10, 2, 2, 4: 1 | 3 layers), inference the
// forwards (1, 1, 1, 3: 3 | 1 layers).
profiles::Profile lopsided() {
  profiles::Profile p = gpipe::testing::uniform_profile(4, 1.0, 1.0, 0, 0, 100);
  p.layers[3].samples[0].fwd_us = 3.0;
  p.layers[0].samples[0].bwd_us = 9.0;
  p.layers[1].param_bytes = 250;
  return p;
}

TEST(InferencePlan, BalancesTheForwardCostsAlone) {
  const InferencePlan p = make_inference_plan(lopsided(), {.stages = 2, .micro_batch_size = 1});
  EXPECT_EQ(p.partition.layers_per_stage, (std::vector<int>{3, 1}));
  EXPECT_EQ(p.stages.at(0).fwd_ns, 3000);
  EXPECT_EQ(p.stages.at(1).fwd_ns, 3000);
  // Weights only: 100 + 250 + 100 and 100 bytes, no gradients or optimizer state.
  EXPECT_EQ(p.static_bytes, (std::vector<std::int64_t>{450, 100}));
}

TEST(InferencePlan, SumsTheLayersStateBytes) {
  profiles::Profile p = lopsided();
  p.layers[1].samples[0].state_bytes = 64;
  p.layers[2].samples[0].state_bytes = 36;
  // One sample at b = 1 scales linearly: at b = 2, twice.
  const InferencePlan plan = make_inference_plan(p, {.stages = 2, .micro_batch_size = 2});
  EXPECT_EQ(plan.stages.at(0).state_bytes, 200);
  EXPECT_EQ(plan.stages.at(1).state_bytes, 0);
}

TEST(InferencePlan, AnInferenceProfileCannotPlanTraining) {
  profiles::Profile p = lopsided();
  p.workload = "inference";
  EXPECT_EQ(make_inference_plan(p, {.stages = 2}).partition.layers_per_stage, (std::vector<int>{3, 1}));
  PlanRequest training;
  training.stages = 2;
  training.microbatches = 2;
  training.batch = 2;
  EXPECT_TRUE(error_of([&] { (void)make_plan(p, training); }).starts_with("the profile was measured for inference"));
}

// A layer with state (dit's cache=1) belongs to a stream: training refuses it, naming the layer.
TEST(InferencePlan, StateCannotPlanTraining) {
  profiles::Profile p = lopsided();
  p.layers[2].name = "block1";
  p.layers[2].kind = "dit_block";
  p.layers[2].samples[0].state_bytes = 36;
  PlanRequest training;
  training.stages = 2;
  training.microbatches = 2;
  training.batch = 2;
  EXPECT_EQ(error_of([&] { (void)make_plan(p, training); }),
            "layer block1 (dit_block) keeps state from one item of an inference stream to the next (dit's "
            "cache=1): a training step has no stream; drop cache=1, or serve it with --workload inference");
}

TEST(InferencePlan, RefusesWhatCannotBe) {
  EXPECT_EQ(error_of([] { (void)make_inference_plan(lopsided(), {.stages = 0}); }), "--stages must be at least 1, got 0");
  EXPECT_EQ(error_of([] { (void)make_inference_plan(lopsided(), {.stages = 5}); }),
            "--stages 5 exceeds the 4 layers of the profile: every stage needs at least one layer");
  EXPECT_EQ(error_of([] { (void)make_inference_plan(lopsided(), {.stages = 2, .micro_batch_size = 0}); }),
            "--micro-batch-size must be at least 1, got 0");
}

}  // namespace
}  // namespace gpipe::plan
