// Naive attention on the device (head permutes, the softmax and the
// strided-batched fp32 GEMMs) against exec/cpu/ops/attention, forward and
// backward, on shapes with several samples and heads: causal multi-head
// (GPT's), grouped-query heads (Llama's) and without the mask (DiT's).
#include "exec/cpu/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/cuda/kernels/attention.hpp"
#include "exec/cuda/kernels/heads.hpp"
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

// The softmax of each row over the entries it sees (its first i+1 when
// causal), 0 beyond, as exec/cpu/ops/attention.cpp's softmax_rows.
std::vector<float> reference_softmax(std::vector<float> scores, std::int64_t seq, bool causal) {
  for (std::size_t r = 0; r < scores.size() / seq; ++r) {
    float* row = scores.data() + r * seq;
    const std::int64_t seen = causal ? static_cast<std::int64_t>(r) % seq + 1 : seq;
    float max = row[0];
    for (std::int64_t j = 1; j < seen; ++j) max = std::max(max, row[j]);
    float sum = 0.0F;
    for (std::int64_t j = 0; j < seen; ++j) sum += (row[j] = std::exp(row[j] - max));
    for (std::int64_t j = 0; j < seq; ++j) row[j] = j < seen ? row[j] / sum : 0.0F;
  }
  return scores;
}

TEST(CudaAttention, SoftmaxMatchesTheCpuRowsAndMasksExactly) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // seq 40 > one warp, so a row spans two lanes' strides.
  const std::int64_t matrices = 3;
  const std::int64_t seq = 40;
  for (const bool causal : {true, false}) {
    const auto scores = random_floats(matrices * seq * seq, 2, -4.0F, 4.0F);
    DeviceBuffer<float> d_scores(scores);
    kernels::attention_softmax_forward(matrices, seq, causal, d_scores.get(), nullptr);
    const std::vector<float> probs = d_scores.download();
    expect_close(causal ? "causal softmax" : "softmax", probs,
                 reference_softmax(scores, seq, causal), test::kFp32);
    for (std::int64_t r = 0; causal && r < matrices * seq; ++r) {
      for (std::int64_t j = r % seq + 1; j < seq; ++j) ASSERT_EQ(probs[r * seq + j], 0.0F);
    }
  }
}

TEST(CudaAttention, GroupedQueryHeadsAreCopiedOutAndTheirGradientsSummedBack) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // b 2, S 3, A 4 query heads of d 2 sharing G 2 kv heads: qkv rows of (4 + 2*2) * 2 = 16.
  const cpu::AttentionShape shape{2, 3, 8, 4, 2, true};
  const std::int64_t heads_size = 2 * 4 * 3 * 2;
  const auto qkv = random_floats(2 * 3 * 16, 3);
  DeviceBuffer<float> d_qkv(qkv), d_q(heads_size), d_k(heads_size), d_v(heads_size);
  kernels::split_qkv(shape, d_qkv.get(), d_q.get(), d_k.get(), d_v.get(), nullptr);
  const std::vector<float> k = d_k.download();
  const std::vector<float> v = d_v.download();
  // Sample 1, token 2, query head 3 (kv head 1), element 1: k at column 8 + 1*2 + 1, v at 12 + 3.
  const std::int64_t at = ((1 * 4 + 3) * 3 + 2) * 2 + 1;
  EXPECT_EQ(k[at], qkv[(1 * 3 + 2) * 16 + 11]);
  EXPECT_EQ(v[at], qkv[(1 * 3 + 2) * 16 + 15]);
  EXPECT_EQ(d_q.download()[at], qkv[(1 * 3 + 2) * 16 + 3 * 2 + 1]);
  // Back: q's gradient copied, kv head 1's the sum of query heads 2 and 3, in that order.
  DeviceBuffer<float> d_dqkv(2 * 3 * 16);
  kernels::merge_qkv_gradients(shape, d_q.get(), d_k.get(), d_v.get(), d_dqkv.get(), nullptr);
  const std::vector<float> dqkv = d_dqkv.download();
  const std::int64_t head2 = ((1 * 4 + 2) * 3 + 2) * 2 + 1;
  EXPECT_EQ(dqkv[(1 * 3 + 2) * 16 + 7], qkv[(1 * 3 + 2) * 16 + 7]);
  EXPECT_EQ(dqkv[(1 * 3 + 2) * 16 + 11], k[head2] + k[at]);
  EXPECT_EQ(dqkv[(1 * 3 + 2) * 16 + 15], v[head2] + v[at]);
}

void expect_attention_matches(const cpu::AttentionShape& shape, std::uint32_t seed) {
  const std::int64_t b = shape.batch, s = shape.seq, h = shape.hidden, a = shape.heads;
  const std::int64_t w = shape.qkv_width();
  const auto qkv = random_floats(b * s * w, seed);
  const auto dout = random_floats(b * s * h, seed + 1);
  std::vector<float> probs(b * a * s * s), out(b * s * h), dqkv(b * s * w);
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
                          std::to_string(h) + " A" + std::to_string(a) + " G" +
                          std::to_string(shape.kv_groups()) + (shape.causal ? " causal" : "");
  expect_close("attention probs" + tag, d_probs.download(), probs, test::kFp32);
  expect_close("attention out" + tag, d_out.download(), out, test::kFp32);
  // Two GEMMs and a softmax deep (and a kv head's gradient a sum over its
  // group's query heads): a little more room than one kernel.
  expect_close("attention dqkv" + tag, d_dqkv.download(), dqkv, test::Tolerance{3e-5, 3e-5});
}

TEST(CudaAttention, ForwardAndBackwardMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_attention_matches({2, 8, 32, 4}, 10);   // the test models' sizes
  expect_attention_matches({3, 37, 48, 3}, 20);  // seq over a warp, three heads of 16
}

TEST(CudaAttention, GroupedQueryHeadsMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // {batch, seq, hidden, heads, kv_heads, causal}
  expect_attention_matches({2, 9, 32, 4, 2, true}, 30);   // two heads per kv head
  expect_attention_matches({2, 37, 48, 6, 1, true}, 40);  // one kv head for all (MQA)
}

TEST(CudaAttention, WithoutTheMaskMatchesCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_attention_matches({2, 6, 8, 2, 2, false}, 50);    // the DiT test model's sizes
  expect_attention_matches({3, 37, 48, 6, 3, false}, 60);  // seq over a warp, with groups
}

}  // namespace
}  // namespace gpipe::exec::cuda
