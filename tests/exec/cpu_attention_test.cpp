// Causality of the transformer block: an output position depends only on the
// inputs at or before it, forward (changing a later token leaves earlier
// outputs bit for bit unchanged) and backward (a gradient at position 0 only
// reaches input position 0); the stashed probabilities are causal softmaxes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "exec/cpu/layers/layer.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

constexpr std::int64_t kB = 2;
constexpr std::int64_t kS = 4;
constexpr std::int64_t kH = 8;
constexpr std::int64_t kA = 2;

struct Block {
  models::Model model = cases::small_transformer();
  std::unique_ptr<Layer> layer = make_layer(model, 1, 9);

  Block() {
    // Larger weights than the init, so attention is far from uniform.
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0F, 0.3F);
    for (Parameter& p : layer->parameters()) {
      if (p.name.find("gamma") == std::string::npos) {
        for (float& v : p.value.f32()) v = normal(rng);
      }
    }
  }

  Tensor forward(const Tensor& x, Stash& stash) {
    return layer->forward(x.clone(), nullptr, stash, nullptr);
  }
};

// Output row (sample n, position s) of a [b, S, H] tensor.
std::span<const float> row(const Tensor& t, std::int64_t n, std::int64_t s) {
  return t.f32().subspan(static_cast<std::size_t>((n * kS + s) * kH), kH);
}

bool rows_equal(const Tensor& a, const Tensor& b, std::int64_t n, std::int64_t s) {
  return std::ranges::equal(row(a, n, s), row(b, n, s));
}

TEST(CpuAttention, ChangingALaterTokenLeavesEarlierOutputsUnchanged) {
  Block block;
  std::mt19937 rng(4);
  const Tensor x = cases::random_normal({kB, kS, kH}, rng);
  for (std::int64_t changed = 0; changed < kS; ++changed) {
    SCOPED_TRACE("changed position " + std::to_string(changed));
    // A varied change: adding one constant to a row would vanish in LayerNorm.
    Tensor x2 = x.clone();
    for (std::int64_t j = 0; j < kH; ++j) {
      x2.f32()[static_cast<std::size_t>(changed * kH + j)] += static_cast<float>(j % 3) - 1.0F;
    }
    Stash s1;
    Stash s2;
    const Tensor y1 = block.forward(x, s1);
    const Tensor y2 = block.forward(x2, s2);
    for (std::int64_t s = 0; s < kS; ++s) {
      EXPECT_EQ(rows_equal(y1, y2, 0, s), s < changed) << "position " << s;
      EXPECT_TRUE(rows_equal(y1, y2, 1, s)) << "the other sample, position " << s;
    }
  }
}

TEST(CpuAttention, GradientAtFirstPositionReachesOnlyFirstInput) {
  Block block;
  std::mt19937 rng(5);
  const Tensor x = cases::random_normal({kB, kS, kH}, rng);
  Stash stash;
  (void)block.forward(x, stash);
  Tensor dy({kB, kS, kH});
  for (std::int64_t j = 0; j < kH; ++j)
    dy.f32()[static_cast<std::size_t>(j)] = 1.0F;  // sample 0, s 0
  const Tensor dx = block.layer->backward(std::move(stash), dy);
  EXPECT_TRUE(std::ranges::any_of(row(dx, 0, 0), [](float v) { return v != 0.0F; }));
  for (std::int64_t n = 0; n < kB; ++n) {
    for (std::int64_t s = 0; s < kS; ++s) {
      if (n == 0 && s == 0) continue;
      EXPECT_TRUE(std::ranges::all_of(row(dx, n, s), [](float v) { return v == 0.0F; }))
          << "sample " << n << " position " << s;
    }
  }
}

TEST(CpuAttention, StashedProbabilitiesAreCausalSoftmaxes) {
  Block block;
  std::mt19937 rng(6);
  Stash stash;
  (void)block.forward(cases::random_normal({kB, kS, kH}, rng), stash);
  const Tensor& probs = stash.tensors[3];  // x, LN1 out, qkv, P, ...
  ASSERT_EQ(probs.shape(), (std::vector<std::int64_t>{kB, kA, kS, kS}));
  const auto p = probs.f32();
  bool some_not_uniform = false;
  for (std::int64_t r = 0; r < kB * kA * kS; ++r) {
    const std::int64_t i = r % kS;
    double sum = 0;
    for (std::int64_t j = 0; j < kS; ++j) {
      const float v = p[static_cast<std::size_t>(r * kS + j)];
      if (j > i) {
        EXPECT_EQ(v, 0.0F) << "row " << r << " col " << j;
      } else {
        EXPECT_GT(v, 0.0F);
        sum += v;
        some_not_uniform |= std::abs(v - 1.0 / static_cast<double>(i + 1)) > 1e-3;
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << r;
  }
  EXPECT_TRUE(some_not_uniform);
}

}  // namespace
}  // namespace gpipe::exec::cpu
