// Exact and closed-form values of the CPU layer math: GEMM against a plain
// loop (strided, transposed), GELU, LayerNorm, cross-entropy, the MSE loss.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/cross_entropy.hpp"
#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "models/families.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

TEST(CpuGemm, MatchesLoopsWithTransposesAndStrides) {
  // op(A) [m,k] and op(B) [k,n] taken from wider matrices (leading dimension 7),
  // small integers so the products are exact in fp32.
  const int m = 3;
  const int n = 4;
  const int k = 5;
  const int ld = 7;
  std::vector<float> a(7 * 7);
  std::vector<float> b(7 * 7);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    b[i] = static_cast<float>(static_cast<int>(i % 3) - 1);
  }
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      std::vector<float> c(m * ld, 1.0F);
      gemm(ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, m, n, k, 2.0F,
           a.data(), ld, b.data(), ld, 1.0F, c.data(), ld);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          float expected = 1.0F;  // beta * the old C
          for (int p = 0; p < k; ++p) {
            const float av = ta ? a[p * ld + i] : a[i * ld + p];
            const float bv = tb ? b[j * ld + p] : b[p * ld + j];
            expected += 2.0F * av * bv;
          }
          EXPECT_EQ(c[i * ld + j], expected) << "ta=" << ta << " tb=" << tb << " " << i << "," << j;
        }
        for (int j = n; j < ld; ++j) EXPECT_EQ(c[i * ld + j], 1.0F) << "wrote outside C";
      }
    }
  }
  EXPECT_EQ(blas_threads(), 1);
}

TEST(CpuGelu, KnownValues) {
  const std::vector<float> x = {0.0F, 1.0F, -1.0F, 10.0F, -10.0F};
  std::vector<float> y(x.size());
  gelu_forward(static_cast<std::int64_t>(x.size()), x.data(), y.data());
  EXPECT_EQ(y[0], 0.0F);
  // 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)), computed in double.
  EXPECT_NEAR(y[1], 0.8411919906082768, 1e-6);
  EXPECT_NEAR(y[2], -0.1588080093917232, 1e-6);
  EXPECT_EQ(y[3], 10.0F);
  EXPECT_NEAR(y[4], 0.0F, 1e-6);
  std::vector<float> dy(x.size(), 1.0F);
  std::vector<float> dx(x.size());
  gelu_backward(static_cast<std::int64_t>(x.size()), x.data(), dy.data(), dx.data());
  EXPECT_EQ(dx[0], 0.5F);  // gelu'(0) = 1/2
  EXPECT_NEAR(dx[3], 1.0F, 1e-6);
  EXPECT_NEAR(dx[4], 0.0F, 1e-6);
  // gelu'(1) = 0.5 (1 + t) + 0.5 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715), t = tanh(sqrt(2/pi) 1.044715), in double.
  EXPECT_NEAR(dx[1], 1.0829640838457826, 1e-6);
  // A NaN in stays NaN (GELU is v sigmoid(2u): the sigmoid of NaN is a number).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  gelu_forward(1, &nan, y.data());
  gelu_backward(1, &nan, dy.data(), dx.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(dx[0]));
}

TEST(CpuLayerNorm, ConstantRowGivesBetaAndKnownRowGivesClosedForm) {
  const std::vector<float> gamma = {2.0F, 2.0F, 2.0F, 2.0F};
  const std::vector<float> beta = {0.5F, -0.5F, 1.0F, 0.0F};
  // Row 0: constant 3.5 (x - mean is exactly 0). Row 1: 1,2,3,4: mean 2.5, var 1.25.
  const std::vector<float> x = {3.5F, 3.5F, 3.5F, 3.5F, 1.0F, 2.0F, 3.0F, 4.0F};
  std::vector<float> y(8);
  std::vector<float> stats(4);
  layernorm_forward(2, 4, x.data(), gamma.data(), beta.data(), y.data(), stats.data());
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], beta[j]);
  EXPECT_EQ(stats[0], 3.5F);
  EXPECT_NEAR(stats[1], 1.0 / std::sqrt(1e-5), 1e-2);
  EXPECT_EQ(stats[2], 2.5F);
  const double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(stats[3], rstd, 1e-6);
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(y[4 + j], (x[4 + j] - 2.5) * rstd * 2.0 + beta[j], 1e-6) << j;
  }
}

TEST(CpuCrossEntropy, UniformLogitsGiveLogVocabAndKnownGradient) {
  const int vocab = 11;
  std::vector<float> logits(2 * vocab, 0.25F);
  const std::vector<std::int32_t> targets = {3, 10};
  std::vector<float> loss(2);
  cross_entropy_forward(2, vocab, logits.data(), targets.data(), loss.data());
  EXPECT_NEAR(loss[0], std::log(11.0), 1e-6);
  EXPECT_NEAR(loss[1], std::log(11.0), 1e-6);
  for (float p : logits) EXPECT_NEAR(p, 1.0 / 11.0, 1e-7);
  const std::vector<float> scale = {1.0F, 0.5F};
  cross_entropy_backward(2, vocab, logits.data(), targets.data(), scale.data(), logits.data());
  EXPECT_NEAR(logits[3], 1.0 / 11.0 - 1.0, 1e-6);
  EXPECT_NEAR(logits[0], 1.0 / 11.0, 1e-7);
  EXPECT_NEAR(logits[vocab + 10], 0.5 * (1.0 / 11.0 - 1.0), 1e-6);
}

TEST(CpuCrossEntropy, HugeLogitGapStaysFinite) {
  std::vector<float> logits = {200.0F, -200.0F};
  const std::vector<std::int32_t> target = {1};
  std::vector<float> loss(1);
  cross_entropy_forward(1, 2, logits.data(), target.data(), loss.data());
  EXPECT_FLOAT_EQ(loss[0], 400.0F);
}

TEST(CpuLmHead, ZeroUnembeddingGivesLogVocab) {
  const models::Model model = cases::small_transformer();
  auto head = make_layer(model, 2, 1);
  for (Parameter& p : head->parameters()) {
    if (p.name == "wu") std::ranges::fill(p.value.f32(), 0.0F);
  }
  std::mt19937 rng(2);
  const Tensor target = cases::random_ids({2, model.seq}, model.vocab, rng);
  Stash stash;
  const Tensor loss = head->forward(cases::random_normal({2, model.seq, model.hidden}, rng),
                                    &target, stash, nullptr);
  EXPECT_NEAR(loss.f32()[0], std::log(11.0), 1e-6);
  EXPECT_NEAR(loss.f32()[1], std::log(11.0), 1e-6);
}

TEST(CpuMseLoss, KnownValuesAndGradient) {
  const models::Model model = models::build_mlp(1, 3);
  auto mse = make_layer(model, 1, 1);
  Tensor x({2, 3});
  Tensor t({2, 3});
  const std::vector<float> xv = {1, 2, 3, 0.5F, 0.5F, 0.5F};
  const std::vector<float> tv = {0, 0, 0, 0.5F, 1.5F, -0.5F};
  std::ranges::copy(xv, x.f32().begin());
  std::ranges::copy(tv, t.f32().begin());
  Stash stash;
  const Tensor loss = mse->forward(std::move(x), &t, stash, nullptr);
  EXPECT_FLOAT_EQ(loss.f32()[0], 14.0F / 3.0F);
  EXPECT_FLOAT_EQ(loss.f32()[1], 2.0F / 3.0F);
  Tensor g({2});
  g.f32()[0] = 0.5F;
  g.f32()[1] = 0.25F;
  const Tensor dx = mse->backward(std::move(stash), g);
  // d/dx_j = g * 2 (x_j - t_j) / H
  EXPECT_FLOAT_EQ(dx.f32()[2], 0.5F * 2.0F * 3.0F / 3.0F);
  EXPECT_FLOAT_EQ(dx.f32()[4], 0.25F * 2.0F * -1.0F / 3.0F);
  EXPECT_EQ(dx.f32()[3], 0.0F);
}

}  // namespace
}  // namespace gpipe::exec::cpu
