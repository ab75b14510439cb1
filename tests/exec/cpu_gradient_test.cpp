// Every CPU layer's backward against central finite differences of its
// forward, element by element, for the input and every parameter. The scalar
// is L = sum(output * r) for fixed random r (a loss layer: the per-sample
// losses weighted by its grad_output), so dL/d(output) = r is what backward gets.
//
// Tolerance (fp32): eps = 1e-2; for each tensor the largest |fd - analytic|
// over its elements, divided by the largest |analytic|, must be <= 1e-2. The
// parameters are redrawn larger than the GPT-2 init (std 0.3, gamma 1 +- 0.3)
// so that GELU, the softmaxes and LayerNorm work well away from linear.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <span>

#include "exec/cpu/layers/layer.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

using cases::LayerCase;

constexpr float kEps = 1e-2F;
constexpr double kGradientTolerance = 1e-2;
constexpr int kBatch = 3;

struct Problem {
  std::unique_ptr<Layer> layer;
  Tensor input;
  Tensor target;
  Tensor grad_output;  // r

  [[nodiscard]] const Tensor* target_or_null() const { return target.empty() ? nullptr : &target; }

  [[nodiscard]] double scalar() {
    Stash stash;
    const Tensor out = layer->forward(input.clone(), target_or_null(), stash, nullptr);
    double sum = 0.0;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      sum += static_cast<double>(out.f32()[static_cast<std::size_t>(i)]) *
             grad_output.f32()[static_cast<std::size_t>(i)];
    }
    return sum;
  }

  // One forward and backward; returns the input gradient (empty for the embedding).
  [[nodiscard]] Tensor backward() {
    Stash stash;
    (void)layer->forward(input.clone(), target_or_null(), stash, nullptr);
    return layer->backward(std::move(stash), grad_output);
  }
};

Problem make_problem(const LayerCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.layer = cases::training_layer(c, seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (Parameter& param : p.layer->parameters()) {
    const bool gamma = param.name.find("gamma") != std::string::npos;
    for (float& v : param.value.f32()) v = (gamma ? 1.0F : 0.0F) + 0.3F * normal(rng);
  }
  p.input = cases::random_input(c, kBatch, rng);
  p.target = cases::random_target(c, kBatch, rng);
  p.grad_output = Tensor(cases::output_shape(c, kBatch));
  std::uniform_real_distribution<float> positive(0.5F, 1.5F);
  for (float& v : p.grad_output.f32()) v = c.is_loss() ? positive(rng) : normal(rng);
  return p;
}

// Perturbs each element of `values` by +-eps, in place, and compares.
void expect_matches_finite_differences(const std::string& what, std::span<float> values,
                                       std::span<const float> analytic,
                                       const std::function<double()>& scalar) {
  ASSERT_EQ(values.size(), analytic.size()) << what;
  double max_abs = 0.0;
  double max_grad = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    const float up = saved + kEps;
    const float down = saved - kEps;
    values[i] = up;
    const double l_up = scalar();
    values[i] = down;
    const double l_down = scalar();
    values[i] = saved;
    const double fd = (l_up - l_down) / (static_cast<double>(up) - down);
    max_abs = std::max(max_abs, std::abs(fd - analytic[i]));
    max_grad = std::max(max_grad, static_cast<double>(std::abs(analytic[i])));
  }
  const double rel = max_abs / max_grad;
  std::printf("  %-28s %4zu elems  max|grad| %.3e  max abs err %.3e  rel %.3e\n", what.c_str(),
              values.size(), max_grad, max_abs, rel);
  EXPECT_GT(max_grad, 0.0) << what << ": an all-zero gradient checks nothing";
  EXPECT_LE(rel, kGradientTolerance) << what;
}

class CpuGradient : public ::testing::TestWithParam<LayerCase> {};

TEST_P(CpuGradient, BackwardMatchesFiniteDifferences) {
  const LayerCase& c = GetParam();
  Problem p = make_problem(c, 11);
  std::printf("%s (b=%d)\n", c.label.c_str(), kBatch);
  const Tensor grad_input = p.backward();
  auto scalar = [&p] { return p.scalar(); };
  if (c.reads_data()) {
    EXPECT_TRUE(grad_input.empty());
  } else {
    expect_matches_finite_differences(c.label + " input", p.input.f32(), grad_input.f32(), scalar);
  }
  for (Parameter& param : p.layer->parameters()) {
    expect_matches_finite_differences(c.label + " " + param.name, param.value.f32(),
                                      param.grad.f32(), scalar);
  }
}

TEST_P(CpuGradient, WeightGradientsAccumulateOverBackwards) {
  const LayerCase& c = GetParam();
  Problem p = make_problem(c, 5);
  const Tensor first_input_grad = p.backward();
  std::vector<Tensor> first;
  for (const Parameter& param : p.layer->parameters()) first.push_back(param.grad.clone());
  const Tensor second_input_grad = p.backward();
  if (!first_input_grad.empty()) {
    EXPECT_TRUE(cases::same_values(first_input_grad, second_input_grad)) << "not deterministic";
  }
  for (std::size_t k = 0; k < first.size(); ++k) {
    const Parameter& param = p.layer->parameters()[k];
    const auto once = first[k].f32();
    const auto twice = param.grad.f32();
    float scale = 0.0F;
    for (float v : once) scale = std::max(scale, std::abs(v));
    ASSERT_GT(scale, 0.0F) << param.name;
    for (std::size_t i = 0; i < once.size(); ++i) {
      ASSERT_NEAR(twice[i], 2.0F * once[i], 1e-6F * scale) << param.name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, CpuGradient, ::testing::ValuesIn(cases::cpu_layer_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace gpipe::exec::cpu
