// The cost of a layer at any micro-batch size: linear between samples, linear
// from the two nearest outside them, proportional with one sample. The numbers
// are designed so that every expected value is exact in binary floating point.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "profiles/interpolate.hpp"

namespace gpipe::profiles {
namespace {

ProfileSample sample(int b, double fwd, double bwd, std::int64_t in, std::int64_t out,
                     std::int64_t act) {
  return ProfileSample{b, fwd, bwd, std::nullopt, std::nullopt, in, out, act};
}

ProfileSample split_sample(int b, double fwd, double bwd, double input, double weight,
                           std::int64_t in, std::int64_t out, std::int64_t act) {
  return ProfileSample{b, fwd, bwd, input, weight, in, out, act};
}

// Samples at 2, 4 and 8 with different slopes on each side of 4.
LayerProfile three_samples() {
  return LayerProfile{"block", "mlp_block", 0, 0,
                      {split_sample(2, 10, 30, 12, 18, 200, 300, 1000),
                       split_sample(4, 18, 50, 20, 30, 400, 600, 1800),
                       split_sample(8, 30, 90, 40, 50, 800, 1200, 3000)}};
}

TEST(CostAt, InterpolatesWhatTheWeightGradientKeeps) {
  LayerProfile layer = three_samples();
  layer.samples[0].weight_grad_stash_bytes = 600;
  layer.samples[1].weight_grad_stash_bytes = 1000;
  layer.samples[2].weight_grad_stash_bytes = 1800;
  EXPECT_EQ(cost_at(layer, 4).weight_grad_stash_bytes, 1000);
  EXPECT_EQ(cost_at(layer, 3).weight_grad_stash_bytes, 800);
  EXPECT_EQ(cost_at(layer, 6).weight_grad_stash_bytes, 1400);
  // Never more than the activations it is a share of.
  layer.samples[2].weight_grad_stash_bytes = 3000;
  EXPECT_EQ(cost_at(layer, 16).weight_grad_stash_bytes, cost_at(layer, 16).activation_bytes);
}

TEST(CostAt, GivesASampledSizeExactly) {
  EXPECT_EQ(cost_at(three_samples(), 2), (LayerCost{10, 30, 12, 18, 200, 300, 1000, 1000}));
  EXPECT_EQ(cost_at(three_samples(), 4), (LayerCost{18, 50, 20, 30, 400, 600, 1800, 1800}));
  EXPECT_EQ(cost_at(three_samples(), 8), (LayerCost{30, 90, 40, 50, 800, 1200, 3000, 3000}));
}

TEST(CostAt, InterpolatesBetweenTheTwoSamplesAround) {
  EXPECT_EQ(cost_at(three_samples(), 3), (LayerCost{14, 40, 16, 24, 300, 450, 1400, 1400}));
  EXPECT_EQ(cost_at(three_samples(), 6), (LayerCost{24, 70, 30, 40, 600, 900, 2400, 2400}));
  EXPECT_EQ(cost_at(three_samples(), 7), (LayerCost{27, 80, 35, 45, 700, 1050, 2700, 2700}));
}

TEST(CostAt, ExtrapolatesBelowFromTheFirstTwoSamples) {
  EXPECT_EQ(cost_at(three_samples(), 1), (LayerCost{6, 20, 8, 12, 100, 150, 600, 600}));
}

TEST(CostAt, ExtrapolatesAboveFromTheLastTwoSamples) {
  // Slopes of 4..8: fwd 3/sample, bwd 10, I 5, W 5, bytes 100, 150, 300.
  EXPECT_EQ(cost_at(three_samples(), 16), (LayerCost{54, 170, 80, 90, 1600, 2400, 5400, 5400}));
}

TEST(CostAt, InterpolatesAtTheMidpointOfTwoSamples) {
  const LayerProfile layer{"l", "k", 0, 0,
                           {sample(2, 1, 2, 10, 20, 30), sample(6, 5, 10, 50, 60, 70)}};
  EXPECT_EQ(cost_at(layer, 4), (LayerCost{3, 6, 3, 3, 30, 40, 50, 50}));
}

TEST(CostAt, ScalesProportionallyWithOneSample) {
  const LayerProfile layer{"l", "k", 0, 0, {sample(4, 10, 30, 400, 100, 1000)}};
  EXPECT_EQ(cost_at(layer, 6), (LayerCost{15, 45, 22.5, 22.5, 600, 150, 1500, 1500}));
  EXPECT_EQ(cost_at(layer, 1), (LayerCost{2.5, 7.5, 3.75, 3.75, 100, 25, 250, 250}));
  EXPECT_EQ(cost_at(layer, 4), (LayerCost{10, 30, 15, 15, 400, 100, 1000, 1000}));
}

TEST(CostAt, SplitsAnUnsplitBackwardEvenly) {
  const LayerProfile layer{"l", "k", 0, 0, {sample(2, 1, 3, 0, 0, 0), sample(4, 2, 7, 0, 0, 0)}};
  const LayerCost at3 = cost_at(layer, 3);
  EXPECT_EQ(at3.bwd_us, 5.0);
  EXPECT_EQ(at3.bwd_input_us, 2.5);
  EXPECT_EQ(at3.bwd_weight_us, 2.5);
}

TEST(CostAt, ClampsTimesAtZero) {
  // fwd falls by 4 per sample: at 8 the line gives -14 us.
  const LayerProfile layer{"l", "k", 0, 0, {sample(2, 10, 1, 0, 0, 0), sample(4, 2, 1, 0, 0, 0)}};
  EXPECT_EQ(cost_at(layer, 8).fwd_us, 0.0);
  EXPECT_EQ(cost_at(layer, 1).fwd_us, 14.0);
}

TEST(CostAt, ClampsBytesAtZero) {
  const LayerProfile layer{"l", "k", 0, 0,
                           {sample(2, 1, 1, 0, 100, 0), sample(4, 1, 1, 0, 50, 0)}};
  EXPECT_EQ(cost_at(layer, 16).output_bytes, 0);
}

TEST(CostAt, RoundsBytesToTheNearestInteger) {
  const LayerProfile layer{"l", "k", 0, 0,
                           {sample(2, 1, 1, 1, 1, 1), sample(5, 1, 1, 2, 2, 2)}};
  EXPECT_EQ(cost_at(layer, 3).input_bytes, 1);  // 1.33
  EXPECT_EQ(cost_at(layer, 4).input_bytes, 2);  // 1.67
  const LayerProfile one{"l", "k", 0, 0, {sample(2, 1, 1, 0, 101, 101)}};
  EXPECT_EQ(cost_at(one, 1).output_bytes, 51);  // 50.5 rounds away from zero
}

TEST(CostAt, KeepsActivationAtLeastTheInputWhenExtrapolating) {
  // Input grows by 100 per sample, activation by 50: at 8 the lines cross.
  const LayerProfile layer{"l", "k", 0, 0,
                           {sample(2, 1, 1, 100, 0, 300), sample(4, 1, 1, 300, 0, 400)}};
  const LayerCost at8 = cost_at(layer, 8);
  EXPECT_EQ(at8.input_bytes, 700);
  EXPECT_EQ(at8.activation_bytes, 700);  // the line alone gives 600
}

TEST(CostAt, RejectsANonPositiveMicroBatchSize) {
  try {
    (void)cost_at(three_samples(), 0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "layer 'block': micro-batch size must be positive (got 0)");
  }
}

TEST(CostAt, RejectsALayerWithoutSamples) {
  const LayerProfile layer{"empty", "k", 0, 0, {}};
  try {
    (void)cost_at(layer, 1);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "layer 'empty': profile has no samples");
  }
}

}  // namespace
}  // namespace gpipe::profiles
