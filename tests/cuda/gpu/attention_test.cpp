// Causal attention on the device (head permutes, causal softmax and the
// strided-batched fp32 GEMMs) against exec/cpu/attention, forward and
// backward, on shapes with several samples and heads.
#include "exec/cpu/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/cuda/kernels/attention.hpp"
#include "exec/cuda/kernels/softmax.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

TEST(CudaAttention, SplitThenMergeHeadsIsTheIdentity) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const kernels::HeadLayout layout{2, 5, 3, 4, 3};
  const std::int64_t count = 2 * 5 * 3 * 4 * 3;
  const auto rows = random_floats(count, 1);
  DeviceBuffer<float> d_rows(rows), d_heads(count), d_back(count);
  kernels::split_heads(layout, d_rows.get(), d_heads.get(), nullptr);
  kernels::merge_heads(layout, d_heads.get(), d_back.get(), nullptr);
  expect_close("split/merge heads", d_back.download(), rows, test::kExact);
  // One element by hand: sample 1, token 2, part k (1), head 2, element 3.
  const std::vector<float> heads = d_heads.download();
  const std::int64_t hidden = 12;
  const float want = rows[(1 * 5 + 2) * 3 * hidden + 1 * hidden + 2 * 4 + 3];
  EXPECT_EQ(heads[(((1 * 2 + 1) * 3 + 2) * 5 + 2) * 4 + 3], want);
}

TEST(CudaAttention, CausalSoftmaxMatchesTheCpuRowsAndMasksExactly) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // seq 40 > one warp, so a row spans two lanes' strides.
  const std::int64_t matrices = 3;
  const std::int64_t seq = 40;
  auto scores = random_floats(matrices * seq * seq, 2, -4.0F, 4.0F);
  DeviceBuffer<float> d_scores(scores);
  kernels::causal_softmax_forward(matrices, seq, d_scores.get(), nullptr);
  for (std::int64_t r = 0; r < matrices * seq; ++r) {
    float* row = scores.data() + r * seq;
    const std::int64_t i = r % seq;
    float max = row[0];
    for (std::int64_t j = 1; j <= i; ++j) max = std::max(max, row[j]);
    float sum = 0.0F;
    for (std::int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - max));
    for (std::int64_t j = 0; j < seq; ++j) row[j] = j <= i ? row[j] / sum : 0.0F;
  }
  const std::vector<float> probs = d_scores.download();
  expect_close("causal softmax", probs, scores, test::kFp32);
  for (std::int64_t r = 0; r < matrices * seq; ++r) {
    for (std::int64_t j = r % seq + 1; j < seq; ++j) ASSERT_EQ(probs[r * seq + j], 0.0F);
  }
}

void expect_attention_matches(const cpu::AttentionShape& shape, std::uint32_t seed) {
  const std::int64_t b = shape.batch, s = shape.seq, h = shape.hidden, a = shape.heads;
  const auto qkv = random_floats(b * s * 3 * h, seed);
  const auto dout = random_floats(b * s * h, seed + 1);
  std::vector<float> probs(b * a * s * s), out(b * s * h), dqkv(b * s * 3 * h);
  cpu::attention_forward(shape, qkv.data(), probs.data(), out.data());
  cpu::attention_backward(shape, qkv.data(), probs.data(), dout.data(), dqkv.data());

  BlasHandle blas;
  DeviceBuffer<float> d_qkv(qkv), d_dout(dout), d_probs(probs.size()), d_out(out.size()),
      d_dqkv(dqkv.size());
  DeviceBuffer<float> forward_scratch(kernels::attention_forward_scratch_floats(shape));
  DeviceBuffer<float> backward_scratch(kernels::attention_backward_scratch_floats(shape));
  kernels::attention_forward(blas, shape, d_qkv.get(), d_probs.get(), d_out.get(),
                             forward_scratch.get(), nullptr);
  kernels::attention_backward(blas, shape, d_qkv.get(), d_probs.get(), d_dout.get(), d_dqkv.get(),
                              backward_scratch.get(), nullptr);
  const std::string tag = " b" + std::to_string(b) + " S" + std::to_string(s) + " H" +
                          std::to_string(h) + " A" + std::to_string(a);
  expect_close("attention probs" + tag, d_probs.download(), probs, test::kFp32);
  expect_close("attention out" + tag, d_out.download(), out, test::kFp32);
  // Two GEMMs and a softmax deep: a little more room than one kernel.
  expect_close("attention dqkv" + tag, d_dqkv.download(), dqkv, test::Tolerance{3e-5, 3e-5});
}

TEST(CudaAttention, ForwardAndBackwardMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_attention_matches({2, 8, 32, 4}, 10);   // the test models' sizes
  expect_attention_matches({3, 37, 48, 3}, 20);  // seq over a warp, three heads of 16
}

}  // namespace
}  // namespace gpipe::exec::cuda
