// Planning for a real model: a profile must describe the model, layer by
// layer; K must fit the model's layers; the balancing profile is the model's
// own analytic one, in fp32.
#include <gtest/gtest.h>

#include "models/model_spec.hpp"
#include "plan/model_profile.hpp"
#include "tests/error_of.hpp"

namespace gpipe::plan {
namespace {

using gpipe::testing::error_of;

// mlp:layers=2 has 3 layers (block0, block1, loss).
TEST(ModelProfile, TheBalancingProfileDescribesTheModel) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const profiles::Profile profile = balancing_profile(model, std::vector<int>{1, 2});
  EXPECT_EQ(profile.model, model.spec);
  EXPECT_EQ(profile.dtype, "fp32");
  ASSERT_EQ(profile.layers.size(), 3u);
  EXPECT_EQ(profile.layers[0].samples.size(), 2u);
  check_profile_matches(model, profile);
  PlanRequest r;
  r.stages = 3;
  check_request_for_model(model, profile, r);
}

TEST(ModelProfile, RefusesAProfileOfAnotherModel) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const profiles::Profile profile = balancing_profile(model, std::vector<int>{1});
  const models::Model other = models::parse_model("mlp:layers=3,hidden=8");
  EXPECT_EQ(error_of([&] { check_profile_matches(other, profile); }),
            "--profile: it profiles 'mlp:layers=2,hidden=8', not --model 'mlp:layers=3,hidden=8'");
  profiles::Profile fewer = profile;
  fewer.layers.pop_back();
  EXPECT_EQ(error_of([&] { check_profile_matches(model, fewer); }), "--profile: 2 layers, the model has 3");
  profiles::Profile renamed = profile;
  renamed.layers[2].kind = "mlp_block";
  EXPECT_EQ(error_of([&] { check_profile_matches(model, renamed); }),
            "--profile: layers[2] is loss (mlp_block), the model's is loss (mse_loss)");
}

TEST(ModelProfile, StagesMustFitTheModel) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const profiles::Profile profile = balancing_profile(model, std::vector<int>{1});
  PlanRequest r;
  r.stages = 4;
  EXPECT_EQ(error_of([&] { check_request_for_model(model, profile, r); }),
            "--stages 4 exceeds the 3 layers of the model: every stage needs at least one layer");
}

}  // namespace
}  // namespace gpipe::plan
