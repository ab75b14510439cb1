// The optimizers against hand-computed updates (exact where the arithmetic is
// a few fp32 operations, so the tolerances are a few ulps).
#include "exec/cpu/optimizer.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace gpipe::exec {
namespace {

std::vector<cpu::Parameter> one_parameter(float value, float grad) {
  std::vector<cpu::Parameter> params;
  params.push_back({"w", Tensor({1}), Tensor({1})});
  params[0].value.f32()[0] = value;
  params[0].grad.f32()[0] = grad;
  return params;
}

TEST(Optimizer, SgdStepsAgainstTheGradientAndZeroesIt) {
  OptimizerConfig config{.kind = models::Optimizer::sgd, .learning_rate = 0.5F};
  auto params = one_parameter(1.0F, 0.25F);
  cpu::OptimizerState state(config, params);
  state.step(params);
  EXPECT_FLOAT_EQ(params[0].value.f32()[0], 1.0F - 0.5F * 0.25F);
  EXPECT_EQ(params[0].grad.f32()[0], 0.0F);
  EXPECT_EQ(state.bytes(), 0);
}

TEST(Optimizer, MomentumAccumulatesVelocityAsPyTorch) {
  OptimizerConfig config{.kind = models::Optimizer::momentum, .learning_rate = 0.1F, .momentum = 0.9F};
  auto params = one_parameter(1.0F, 1.0F);
  cpu::OptimizerState state(config, params);
  state.step(params);  // v = 1, w = 1 - 0.1
  EXPECT_FLOAT_EQ(params[0].value.f32()[0], 0.9F);
  params[0].grad.f32()[0] = 1.0F;
  state.step(params);  // v = 0.9 + 1 = 1.9, w = 0.9 - 0.19
  EXPECT_FLOAT_EQ(params[0].value.f32()[0], 0.71F);
  EXPECT_EQ(state.bytes(), 4);
}

TEST(Optimizer, AdamWFirstStepMovesByTheLearningRate) {
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g),
  // after the decoupled decay w *= 1 - lr * wd.
  OptimizerConfig config{.kind = models::Optimizer::adamw, .learning_rate = 0.01F};
  auto params = one_parameter(2.0F, -3.0F);
  cpu::OptimizerState state(config, params);
  state.step(params);
  const float decayed = 2.0F * (1.0F - 0.01F * 0.01F);
  EXPECT_NEAR(params[0].value.f32()[0], decayed + 0.01F, 1e-6);
  EXPECT_EQ(state.bytes(), 8);
}

TEST(Optimizer, AdamWSecondStepMatchesTheFormula) {
  OptimizerConfig config{.kind = models::Optimizer::adamw, .learning_rate = 0.01F, .weight_decay = 0.0F};
  auto params = one_parameter(0.0F, 1.0F);
  cpu::OptimizerState state(config, params);
  state.step(params);
  params[0].grad.f32()[0] = 0.5F;
  state.step(params);
  const double m = 0.9 * 0.1 + 0.1 * 0.5;           // 0.14
  const double v = 0.999 * 0.001 + 0.001 * 0.25;    // 0.001249
  const double m_hat = m / (1 - 0.81);
  const double v_hat = v / (1 - 0.999 * 0.999);
  const double expected = -0.01 - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
  EXPECT_NEAR(params[0].value.f32()[0], expected, 1e-6);
}

// ZeRO 1: state for the owned runs only, those values updated exactly as the
// whole optimizer updates them, the rest untouched, every gradient zeroed.
TEST(Optimizer, AShardedStateUpdatesItsRunsAsTheWholeOneDoes) {
  OptimizerConfig config{.kind = models::Optimizer::adamw, .learning_rate = 0.01F};
  const auto make = [] {
    std::vector<cpu::Parameter> params;
    params.push_back({"w", Tensor({6}), Tensor({6})});
    params.push_back({"b", Tensor({2}), Tensor({2})});
    for (int i = 0; i < 6; ++i) {
      params[0].value.f32()[static_cast<std::size_t>(i)] = 0.5F * static_cast<float>(i);
      params[0].grad.f32()[static_cast<std::size_t>(i)] = 1.0F - 0.3F * static_cast<float>(i);
    }
    params[1].value.f32()[0] = 1.0F;
    params[1].grad.f32()[0] = 2.0F;
    params[1].grad.f32()[1] = -2.0F;
    return params;
  };
  auto whole = make();
  cpu::OptimizerState full(config, whole);
  auto shard = make();
  cpu::OptimizerState part(config, shard, {{{1, 2}, {5, 1}}, {}});
  EXPECT_EQ(part.bytes(), 3 * 8);  // m and v for 3 values
  for (int step = 0; step < 2; ++step) {
    full.step(whole);
    part.step(shard);
    for (int i : {1, 2, 5}) {
      EXPECT_EQ(shard[0].value.f32()[static_cast<std::size_t>(i)], whole[0].value.f32()[static_cast<std::size_t>(i)]) << i;
    }
    for (int i : {0, 3, 4}) EXPECT_EQ(shard[0].value.f32()[static_cast<std::size_t>(i)], 0.5F * static_cast<float>(i));
    EXPECT_EQ(shard[1].value.f32()[0], 1.0F);  // none of b is this replica's
    for (const auto& p : shard) {
      for (float g : p.grad.f32()) EXPECT_EQ(g, 0.0F);
    }
    // The next step's gradients, the same for both.
    for (std::size_t i = 0; i < 6; ++i) whole[0].grad.f32()[i] = shard[0].grad.f32()[i] = 0.25F;
  }
}

TEST(Optimizer, ARunOutsideItsParameterIsRefused) {
  OptimizerConfig config{.kind = models::Optimizer::momentum};
  auto params = one_parameter(1.0F, 1.0F);
  EXPECT_THROW(cpu::OptimizerState(config, params, {{{0, 2}}}), std::logic_error);
  EXPECT_THROW(cpu::OptimizerState(config, params, {}), std::logic_error);
}

}  // namespace
}  // namespace gpipe::exec
