// make_layer(): weights come from (seed, layer index) alone, GPT-2 style
// (normal(0, 0.02), zero biases, LayerNorm gamma 1 beta 0), and unknown kinds
// or indices are InputErrors naming them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/init.hpp"
#include "models/families.hpp"
#include "tests/error_of.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

using gpipe::testing::error_of;

bool same_parameters(const Layer& a, const Layer& b) {
  if (a.parameters().size() != b.parameters().size()) return false;
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    if (!cases::same_values(a.parameters()[i].value, b.parameters()[i].value)) return false;
  }
  return true;
}

TEST(CpuInit, SameSeedAndIndexGiveSameWeightsAnythingElseDiffers) {
  const models::Model model = cases::small_transformer();
  for (int index = 0; index < 3; ++index) {
    EXPECT_TRUE(same_parameters(*make_layer(model, index, 42), *make_layer(model, index, 42)));
    EXPECT_FALSE(same_parameters(*make_layer(model, index, 42), *make_layer(model, index, 43)));
  }
  // Two blocks of one model start from different weights.
  const models::Model deep =
      models::build_transformer({.layers = 2, .hidden = 8, .heads = 2, .seq = 4, .vocab = 11});
  EXPECT_FALSE(same_parameters(*make_layer(deep, 1, 42), *make_layer(deep, 2, 42)));
}

TEST(CpuInit, Gpt2Initialisation) {
  const models::Model model =
      models::build_transformer({.layers = 1, .hidden = 32, .heads = 2, .seq = 8, .vocab = 64});
  auto block = make_layer(model, 1, 7);
  for (const Parameter& p : block->parameters()) {
    const auto v = p.value.f32();
    EXPECT_TRUE(std::ranges::all_of(p.grad.f32(), [](float g) { return g == 0.0F; })) << p.name;
    if (p.name.find("gamma") != std::string::npos) {
      EXPECT_TRUE(std::ranges::all_of(v, [](float x) { return x == 1.0F; })) << p.name;
    } else if (p.name.front() == 'w') {
      double sum = 0;
      double squares = 0;
      for (float x : v) {
        sum += x;
        squares += static_cast<double>(x) * x;
      }
      const double n = static_cast<double>(v.size());
      // >= 1024 draws: the sample mean and std are within a few percent of 0 and 0.02.
      EXPECT_NEAR(sum / n, 0.0, 0.003) << p.name;
      EXPECT_NEAR(std::sqrt(squares / n), 0.02, 0.002) << p.name;
    } else {
      EXPECT_TRUE(std::ranges::all_of(v, [](float x) { return x == 0.0F; })) << p.name;
    }
  }
}

TEST(CpuInit, NormalInitIsReproducibleAndStandard) {
  NormalInit a(1, 0);
  NormalInit b(1, 0);
  double sum = 0;
  double squares = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const float x = a.next();
    ASSERT_EQ(x, b.next());
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    squares += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(squares / n, 1.0, 0.04);
}

TEST(CpuInit, UnknownKindAndBadIndexAreInputErrors) {
  models::Model model = models::build_mlp(1, 8);
  EXPECT_EQ(error_of([&] { (void)make_layer(model, 2, 1); }),
            "make_layer: layer index 2 is outside model mlp:layers=1,hidden=8 (2 layers)");
  EXPECT_EQ(error_of([&] { (void)make_layer(model, -1, 1); }),
            "make_layer: layer index -1 is outside model mlp:layers=1,hidden=8 (2 layers)");
  model.layers[0].kind = "conv2d";
  EXPECT_EQ(error_of([&] { (void)make_layer(model, 0, 1); }),
            "make_layer: layer block0 has kind 'conv2d', which the CPU backend lacks");
}

TEST(CpuInit, WrongInputsAreInputErrors) {
  const models::Model model = models::build_mlp(1, 8);
  auto block = make_layer(model, 0, 1);
  Stash stash;
  EXPECT_EQ(error_of([&] {
              (void)block->forward(Tensor({2, 7}), nullptr, stash, nullptr);
            }),
            "layer block0 (mlp_block): input is f32[2,7], expected f32[b,8]");
  auto loss = make_layer(model, 1, 1);
  EXPECT_EQ(error_of([&] {
              (void)loss->forward(Tensor({2, 8}), nullptr, stash, nullptr);
            }),
            "layer loss (mse_loss): forward needs a target");
  const models::Model gpt = cases::small_transformer();
  auto embed = make_layer(gpt, 0, 1);
  Tensor ids({1, 4}, ElementType::i32);
  ids.i32()[2] = 11;
  EXPECT_EQ(error_of([&] { (void)embed->forward(std::move(ids), nullptr, stash, nullptr); }),
            "layer embed (embedding): token id 11 at position 2 is outside [0, 11)");
  auto head = make_layer(gpt, 2, 1);
  const Tensor targets({1, 3}, ElementType::i32);
  EXPECT_EQ(error_of([&] {
              (void)head->forward(Tensor({1, 4, 8}), &targets, stash, nullptr);
            }),
            "layer head (lm_head): target is i32[1,3], expected i32[1,4]");
}

}  // namespace
}  // namespace gpipe::exec::cpu
