// Flash attention on the device against exec/cpu/ops/flash_attention, forward
// (out and the log-sum-exp) and backward (dqkv), causal and not, with
// grouped-query heads, on shapes that cover one and several key tiles of 32,
// rows not a multiple of 8, and each of the kernel's register counts (head
// widths up to 32, 64, 128 and 256, the last over 48 KiB of shared memory).
#include "exec/cpu/ops/flash_attention.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cuda/kernels/flash_attention.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

void expect_flash_matches(const cpu::AttentionShape& shape, std::uint32_t seed) {
  const std::int64_t b = shape.batch, s = shape.seq, h = shape.hidden, a = shape.heads;
  const std::int64_t w = shape.qkv_width();
  // Scores of a few units: the softmax is neither flat nor one-hot.
  const auto qkv = random_floats(b * s * w, seed, -2.0F, 2.0F);
  const auto dout = random_floats(b * s * h, seed + 1);
  std::vector<float> out(b * s * h), lse(b * a * s), dqkv(b * s * w);
  cpu::flash_attention_forward(shape, qkv.data(), out.data(), lse.data());
  cpu::flash_attention_backward(shape, qkv.data(), out.data(), lse.data(), dout.data(),
                                dqkv.data());

  DeviceBuffer<float> d_qkv(qkv), d_dout(dout), d_out(out.size()), d_lse(lse.size()),
      d_dqkv(dqkv.size());
  DeviceBuffer<float> scratch(kernels::flash_attention_backward_scratch_floats(shape));
  kernels::flash_attention_forward(shape, d_qkv.get(), d_out.get(), d_lse.get(), nullptr);
  kernels::flash_attention_backward(shape, d_qkv.get(), d_out.get(), d_lse.get(), d_dout.get(),
                                    d_dqkv.get(), scratch.get(), nullptr);
  const std::string tag = " b" + std::to_string(b) + " S" + std::to_string(s) + " A" +
                          std::to_string(a) + " G" + std::to_string(shape.kv_groups()) + " d" +
                          std::to_string(shape.head_dim()) + (shape.causal ? " causal" : "");
  // fp32 with other tile sizes than the CPU's (its keys in tiles of 256, ours
  // of 32): the online softmax rescales at other points, and every score is
  // a dot product summed in column order instead of a GEMM's.
  expect_close("flash out" + tag, d_out.download(), out, test::kFp32);
  expect_close("flash lse" + tag, d_lse.download(), lse, test::kFp32);
  // The backward is the naive attention's depth (and a kv head sums its
  // group's heads): its tolerance, tests/cuda/gpu/attention_test.cpp's.
  expect_close("flash dqkv" + tag, d_dqkv.download(), dqkv, test::Tolerance{3e-5, 3e-5});
}

TEST(CudaFlashAttention, CausalMatchesCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // {batch, seq, hidden, heads, kv_heads, causal}
  expect_flash_matches({2, 5, 8, 4, 2, true}, 10);    // the llama test model: d 2, one tile
  expect_flash_matches({2, 8, 32, 4, 0, true}, 20);   // multi-head, one block of rows
  expect_flash_matches({3, 37, 48, 3, 1, true}, 30);  // two key tiles, 37 rows, one kv head
  expect_flash_matches({1, 70, 256, 4, 2, true}, 40);  // d 64: two registers a lane
}

TEST(CudaFlashAttention, WithoutTheMaskMatchesCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_flash_matches({3, 6, 8, 2, 2, false}, 50);     // the DiT test model: T+1 = 6
  expect_flash_matches({2, 45, 96, 3, 3, false}, 60);   // two key tiles, d 32
  expect_flash_matches({2, 33, 384, 4, 2, false}, 70);  // d 96: four registers a lane
}

TEST(CudaFlashAttention, WidestHeadsMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // d 160 and 256: eight registers a lane, dk/dv's shared memory over 48 KiB.
  expect_flash_matches({1, 20, 320, 2, 1, true}, 80);
  expect_flash_matches({1, 40, 512, 2, 2, false}, 90);
}

TEST(CudaFlashAttention, ALaterTokenLeavesEarlierOutputsUnchanged) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // Causal: row i reads keys 0..i only, so changing the last token's q, k and
  // v changes no earlier row's output or lse, bit for bit.
  const cpu::AttentionShape shape{1, 40, 32, 2, 1, true};
  const std::int64_t w = shape.qkv_width();
  auto qkv = random_floats(40 * w, 100);
  DeviceBuffer<float> d_qkv(qkv), out_a(40 * 32), out_b(40 * 32), lse_a(2 * 40), lse_b(2 * 40);
  kernels::flash_attention_forward(shape, d_qkv.get(), out_a.get(), lse_a.get(), nullptr);
  for (std::int64_t c = 0; c < w; ++c) qkv[39 * w + c] += 1.0F;
  d_qkv.upload(qkv);
  kernels::flash_attention_forward(shape, d_qkv.get(), out_b.get(), lse_b.get(), nullptr);
  const std::vector<float> a = out_a.download(), b = out_b.download();
  const std::vector<float> la = lse_a.download(), lb = lse_b.download();
  for (std::int64_t i = 0; i < 39 * 32; ++i) ASSERT_EQ(a[i], b[i]) << i;
  for (std::int64_t head = 0; head < 2; ++head) {
    for (std::int64_t i = 0; i < 39; ++i) ASSERT_EQ(la[head * 40 + i], lb[head * 40 + i]);
    EXPECT_NE(la[head * 40 + 39], lb[head * 40 + 39]);
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
