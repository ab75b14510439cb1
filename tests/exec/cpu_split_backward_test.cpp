// Every CPU layer kind's backward split into I (input gradient) and W
// (weight gradient), against its full backward, and the bytes I leaves for W:
// - I then W gives EXACTLY (bit for bit) B's input and parameter gradients:
//   a CPU layer's B is its I then its W (exec/cpu/layers/kind_base.hpp), and
//   the finite-difference test (cpu_gradient_test.cpp) checks that B;
// - with three micro-batches whose W's run in another order than their I's,
//   the accumulated gradients equal three B's within round-off: max |split -
//   full| <= 1e-6 * max |full| per parameter (the order of three fp32 sums);
//   the input gradients stay exact (I reads no accumulated state);
// - what I leaves for W is the layout's weight_kept, tensor by tensor, and its
//   bytes equal models::weight_grad_stash_bytes_at; the account never rises
//   above the forward's stash during I and is 0 after W.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/layers/memory_account.hpp"
#include "models/layer_layout.hpp"
#include "tests/error_of.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

using cases::LayerCase;

constexpr double kReorderTolerance = 1e-6;

// One micro-batch of a case: its input, target and output gradient.
struct MicroBatch {
  Tensor input;
  Tensor target;
  Tensor grad_output;
  [[nodiscard]] const Tensor* target_or_null() const { return target.empty() ? nullptr : &target; }
};

MicroBatch draw(const LayerCase& c, std::int64_t b, std::mt19937& rng) {
  MicroBatch mb;
  mb.input = cases::random_input(c, b, rng);
  mb.target = cases::random_target(c, b, rng);
  mb.grad_output = cases::random_normal(cases::output_shape(c, b), rng);
  return mb;
}

// Parameters redrawn away from the near-linear init, so that every gradient is sizeable.
void randomize_seeded(Layer& layer, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 0.3F);
  for (Parameter& p : layer.parameters()) {
    for (float& v : p.value.f32()) v += normal(rng);
  }
}

std::unique_ptr<Layer> layer_of(const LayerCase& c) {
  auto layer = cases::training_layer(c, 1);
  randomize_seeded(*layer, 11);
  return layer;
}

double max_abs_element(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::abs(x)));
  return m;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

class CpuSplitBackward : public ::testing::TestWithParam<LayerCase> {};

TEST_P(CpuSplitBackward, IThenWGivesExactlyTheFullBackwardsGradients) {
  const LayerCase& c = GetParam();
  std::mt19937 rng(5);
  const MicroBatch mb = draw(c, 3, rng);
  auto full = layer_of(c);
  auto split = layer_of(c);

  Stash full_stash;
  (void)full->forward(mb.input.clone(), mb.target_or_null(), full_stash, nullptr);
  const Tensor full_dx = full->backward(std::move(full_stash), mb.grad_output);

  Stash stash;
  Stash weight_stash;
  (void)split->forward(mb.input.clone(), mb.target_or_null(), stash, nullptr);
  const Tensor split_dx = split->backward_input(std::move(stash), mb.grad_output, weight_stash, nullptr);
  split->backward_weight(std::move(weight_stash));

  EXPECT_EQ(split_dx.empty(), full_dx.empty());
  if (!full_dx.empty()) {
    EXPECT_TRUE(cases::same_values(split_dx, full_dx));
  }
  for (std::size_t p = 0; p < full->parameters().size(); ++p) {
    const Parameter& want = full->parameters()[p];
    EXPECT_GT(max_abs_element(want.grad.f32()), 0.0) << want.name << ": a gradient that cannot tell";
    EXPECT_TRUE(cases::same_values(split->parameters()[p].grad, want.grad)) << want.name;
  }
}

TEST_P(CpuSplitBackward, DeferredWeightGradientsAccumulateAsFullBackwards) {
  const LayerCase& c = GetParam();
  std::mt19937 rng(9);
  std::vector<MicroBatch> batches;
  for (const std::int64_t b : {2, 1, 3}) batches.push_back(draw(c, b, rng));
  auto full = layer_of(c);
  auto split = layer_of(c);

  std::vector<Tensor> full_dx;
  for (const MicroBatch& mb : batches) {
    Stash stash;
    (void)full->forward(mb.input.clone(), mb.target_or_null(), stash, nullptr);
    full_dx.push_back(full->backward(std::move(stash), mb.grad_output));
  }
  // F0 F1 F2, I0 I1 I2, then W2 W0 W1.
  std::vector<Stash> stashes(batches.size());
  std::vector<Stash> weight_stashes(batches.size());
  for (std::size_t m = 0; m < batches.size(); ++m) {
    (void)split->forward(batches[m].input.clone(), batches[m].target_or_null(), stashes[m], nullptr);
  }
  for (std::size_t m = 0; m < batches.size(); ++m) {
    const Tensor dx =
        split->backward_input(std::move(stashes[m]), batches[m].grad_output, weight_stashes[m], nullptr);
    if (!full_dx[m].empty()) {
      EXPECT_TRUE(cases::same_values(dx, full_dx[m])) << "micro-batch " << m;
    }
  }
  for (const std::size_t m : {2, 0, 1}) split->backward_weight(std::move(weight_stashes[m]));

  for (std::size_t p = 0; p < full->parameters().size(); ++p) {
    const Parameter& want = full->parameters()[p];
    const double scale = max_abs_element(want.grad.f32());
    ASSERT_GT(scale, 0.0) << want.name;
    EXPECT_LE(max_abs_difference(split->parameters()[p].grad.f32(), want.grad.f32()),
              kReorderTolerance * scale)
        << want.name;
  }
}

TEST_P(CpuSplitBackward, ILeavesTheLayoutsWeightStashAndTheAccountOnlyFalls) {
  const LayerCase& c = GetParam();
  const models::LayerLayout layout = models::layer_layout(c.model, c.spec());
  for (const int b : {1, 3}) {
    SCOPED_TRACE("b = " + std::to_string(b));
    std::mt19937 rng(3);
    const MicroBatch mb = draw(c, b, rng);
    auto layer = layer_of(c);
    MemoryAccount account;
    std::vector<std::int64_t> during;
    account.set_observer([&](std::int64_t bytes) { during.push_back(bytes); });
    Stash stash;
    (void)layer->forward(mb.input.clone(), mb.target_or_null(), stash, &account);
    const std::int64_t activation = models::bytes_at(c.spec(), b, models::DType::fp32).activation_bytes;
    ASSERT_EQ(account.bytes(), activation);

    during.clear();
    Stash weight_stash;
    (void)layer->backward_input(std::move(stash), mb.grad_output, weight_stash, &account);
    const std::int64_t weight = models::weight_grad_stash_bytes_at(c.spec(), b, models::DType::fp32);
    EXPECT_LE(weight, activation);
    EXPECT_EQ(account.bytes(), weight);
    EXPECT_EQ(weight_stash.bytes(), weight);
    EXPECT_EQ(account.peak(), activation) << "I charged more than the forward's stash";
    for (const std::int64_t bytes : during) EXPECT_LE(bytes, activation);
    ASSERT_EQ(weight_stash.tensors.size(), layout.weight_kept.size());
    for (std::size_t i = 0; i < layout.weight_kept.size(); ++i) {
      const Tensor& t = weight_stash.tensors[i];
      EXPECT_EQ(t.shape(), layout.weight_kept_shape(i, b)) << layout.weight_kept[i].name;
      EXPECT_EQ(t.account(), &account) << layout.weight_kept[i].name;
    }

    layer->backward_weight(std::move(weight_stash));
    EXPECT_EQ(account.bytes(), 0);
  }
}

TEST_P(CpuSplitBackward, WRefusesAStashOfTheWrongSize) {
  const LayerCase& c = GetParam();
  auto layer = layer_of(c);
  Stash wrong;
  wrong.tensors.resize(models::layer_layout(c.model, c.spec()).weight_kept.size() + 1);
  EXPECT_THROW(layer->backward_weight(std::move(wrong)), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CpuSplitBackward, ::testing::ValuesIn(cases::cpu_layer_cases()),
                         [](const auto& info) { return info.param.label; });

// A layer that implements only the full backward, as the CUDA layers do so
// far: the contract's defaults refuse a split backward by name.
class UnsplitLayer final : public Layer {
 public:
  explicit UnsplitLayer(models::Layer spec) : Layer(std::move(spec)) {}
  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& /*stash*/,
                 MemoryAccount* /*account*/) override {
    return input;
  }
  Tensor backward(Stash /*stash*/, const Tensor& grad_output) override { return grad_output.clone(); }
};

TEST(LayerContract, ALayerThatDoesNotSplitItsBackwardRefusesIAndW) {
  models::Layer spec;
  spec.name = "block0";
  spec.kind = "mlp_block";
  UnsplitLayer layer(spec);
  Stash weight_stash;
  const char* expected = "layer block0 (mlp_block): this backend's layers do not split the backward into I and W";
  EXPECT_EQ(gpipe::testing::logic_error_of([&] {
              (void)layer.backward_input(Stash{}, Tensor({1, 1}), weight_stash, nullptr);
            }),
            expected);
  EXPECT_EQ(gpipe::testing::logic_error_of([&] { layer.backward_weight(Stash{}); }), expected);
}

}  // namespace
}  // namespace gpipe::exec::cpu
