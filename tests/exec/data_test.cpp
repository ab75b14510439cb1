#include "exec/runtime/synthetic_data.hpp"

#include <gtest/gtest.h>

#include "models/model_spec.hpp"

namespace gpipe::exec {
namespace {

TEST(SyntheticTask, MlpTargetIsHalfTheRotatedInput) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const Batch batch = SyntheticTask(model, 1).batch(0, 3);
  ASSERT_EQ(batch.inputs.shape(), (std::vector<std::int64_t>{3, 8}));
  ASSERT_EQ(batch.targets.shape(), (std::vector<std::int64_t>{3, 8}));
  const auto x = batch.inputs.f32();
  const auto t = batch.targets.f32();
  for (int n = 0; n < 3; ++n) {
    for (int j = 0; j < 8; ++j) EXPECT_EQ(t[n * 8 + j], 0.5F * x[n * 8 + (j + 1) % 8]);
  }
}

TEST(SyntheticTask, TransformerTargetsAreTheNextTokens) {
  const models::Model model = models::parse_model("transformer:layers=1,hidden=8,heads=2,seq=16,vocab=32");
  const Batch batch = SyntheticTask(model, 7).batch(3, 4);
  ASSERT_EQ(batch.inputs.shape(), (std::vector<std::int64_t>{4, 16}));
  const auto ids = batch.inputs.i32();
  const auto targets = batch.targets.i32();
  int follows_recurrence = 0;
  for (int n = 0; n < 4; ++n) {
    for (int s = 0; s + 1 < 16; ++s) EXPECT_EQ(targets[n * 16 + s], ids[n * 16 + s + 1]);
    for (int s = 0; s < 16; ++s) {
      ASSERT_GE(ids[n * 16 + s], 0);
      ASSERT_LT(ids[n * 16 + s], 32);
      follows_recurrence += targets[n * 16 + s] == (5 * ids[n * 16 + s] + 3) % 32;
    }
  }
  // 1 token in 8 is noise, so most of the 64 transitions follow the pattern.
  EXPECT_GT(follows_recurrence, 40);
}

TEST(SyntheticTask, SamplesDependOnSeedAndStepNotOnBatchSize) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=4");
  const SyntheticTask task(model, 5);
  const Batch small = task.batch(2, 2);
  const Batch large = task.batch(2, 6);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(small.inputs.f32()[i], large.inputs.f32()[i]);
  EXPECT_NE(task.batch(3, 2).inputs.f32()[0], small.inputs.f32()[0]);
  EXPECT_NE(SyntheticTask(model, 6).batch(2, 2).inputs.f32()[0], small.inputs.f32()[0]);
}

}  // namespace
}  // namespace gpipe::exec
