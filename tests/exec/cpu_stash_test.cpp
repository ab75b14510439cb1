// The CPU layers keep for their backward exactly what models/model.hpp lists:
// the stash's bytes, and the account they are charged to, equal
// bytes_at(...).activation_bytes byte for byte; the backward gives them all
// back; shapes and parameter counts are as documented.
#include <gtest/gtest.h>

#include <random>

#include "exec/cpu/layers/layer.hpp"
#include "exec/layers/memory_account.hpp"
#include "tests/exec/cpu_layer_cases.hpp"

namespace gpipe::exec::cpu {
namespace {

using cases::LayerCase;

class CpuStash : public ::testing::TestWithParam<LayerCase> {};

TEST_P(CpuStash, StashEqualsModelActivationBytesAndBackwardRefundsIt) {
  const LayerCase& c = GetParam();
  for (const int b : {1, 3}) {
    SCOPED_TRACE("b = " + std::to_string(b));
    std::mt19937 rng(7);
    auto layer = cases::training_layer(c, 1);
    MemoryAccount account;
    Tensor input = cases::random_input(c, b, rng);
    const Tensor input_copy = input.clone();
    const Tensor target = cases::random_target(c, b, rng);
    Stash stash;
    Tensor out =
        layer->forward(std::move(input), target.empty() ? nullptr : &target, stash, &account);

    const std::int64_t expected =
        models::bytes_at(c.spec(), b, models::DType::fp32).activation_bytes;
    EXPECT_EQ(stash.bytes(), expected);
    EXPECT_EQ(account.bytes(), expected);
    EXPECT_EQ(account.peak(), expected) << "temporaries must not be charged";
    ASSERT_EQ(stash.tensors.size(), cases::stash_count(c));
    for (const Tensor& t : stash.tensors) EXPECT_EQ(t.account(), &account);
    // The input is the first stashed tensor, unchanged.
    EXPECT_TRUE(cases::same_values(stash.tensors[0], input_copy));

    EXPECT_EQ(out.shape(), cases::output_shape(c, b));
    EXPECT_EQ(out.type(), ElementType::f32);
    EXPECT_EQ(out.account(), nullptr);

    Tensor grad_output(out.shape());
    for (float& g : grad_output.f32()) g = 1.0F / 3.0F;
    Tensor grad_input = layer->backward(std::move(stash), grad_output);
    EXPECT_EQ(account.bytes(), 0);
    if (c.reads_data()) {
      EXPECT_TRUE(grad_input.empty());
    } else {
      EXPECT_EQ(grad_input.shape(), cases::input_shape(c, b));
      EXPECT_EQ(grad_input.account(), nullptr);
    }
  }
}

TEST_P(CpuStash, ParameterCountsMatchTheModel) {
  const LayerCase& c = GetParam();
  auto layer = cases::training_layer(c, 1);
  std::int64_t count = 0;
  for (const Parameter& p : layer->parameters()) {
    count += p.value.numel();
    EXPECT_EQ(p.grad.shape(), p.value.shape()) << p.name;
    EXPECT_EQ(p.value.account(), nullptr) << p.name;
  }
  EXPECT_EQ(count, c.spec().params);
  EXPECT_EQ(layer->spec(), c.spec());
}

TEST_P(CpuStash, NullAccountChargesNothing) {
  const LayerCase& c = GetParam();
  std::mt19937 rng(3);
  auto layer = cases::training_layer(c, 1);
  const Tensor target = cases::random_target(c, 2, rng);
  Stash stash;
  (void)layer->forward(cases::random_input(c, 2, rng), target.empty() ? nullptr : &target, stash,
                       nullptr);
  EXPECT_EQ(stash.bytes(), models::bytes_at(c.spec(), 2, models::DType::fp32).activation_bytes);
  for (const Tensor& t : stash.tensors) EXPECT_EQ(t.account(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CpuStash, ::testing::ValuesIn(cases::cpu_layer_cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace gpipe::exec::cpu
