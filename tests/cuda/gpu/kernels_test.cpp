// The layer kernels (LayerNorm, GELU, bias, residual, embedding, bf16
// conversion) against the CPU backend on seeded random inputs: exec/cpu
// functions where they exist, the CPU layer's loop otherwise. Each prints its
// max abs and rel error (kernel_check.hpp) and asserts a stated tolerance.
#include <cstdint>
#include <vector>

#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cuda/kernels/bf16.hpp"
#include "exec/cuda/kernels/bias.hpp"
#include "exec/cuda/kernels/embedding.hpp"
#include "exec/cuda/kernels/gelu.hpp"
#include "exec/cuda/kernels/layernorm.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::kRows;
using test::kWidths;
using test::random_floats;

TEST(CudaKernels, LayerNormForwardMatchesCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::int64_t width : kWidths) {
    const auto x = random_floats(kRows * width, 1, -3.0F, 3.0F);
    const auto gamma = random_floats(width, 2, 0.5F, 1.5F);
    const auto beta = random_floats(width, 3);
    std::vector<float> y(kRows * width), stats(2 * kRows);
    cpu::layernorm_forward(kRows, width, x.data(), gamma.data(), beta.data(), y.data(),
                           stats.data());
    DeviceBuffer<float> dx(x), dg(gamma), db(beta), dy(y.size()), ds(stats.size());
    kernels::layernorm_forward(kRows, width, dx.get(), dg.get(), db.get(), dy.get(), ds.get(),
                               nullptr);
    expect_close("layernorm y w" + std::to_string(width), dy.download(), y, test::kFp32);
    expect_close("layernorm stats w" + std::to_string(width), ds.download(), stats, test::kFp32);
  }
}

TEST(CudaKernels, LayerNormBackwardAccumulatesLikeCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::int64_t width : kWidths) {
    const auto x = random_floats(kRows * width, 4, -3.0F, 3.0F);
    const auto gamma = random_floats(width, 5, 0.5F, 1.5F);
    const auto beta = random_floats(width, 6);
    const auto dy = random_floats(kRows * width, 7);
    std::vector<float> y(kRows * width), stats(2 * kRows);
    cpu::layernorm_forward(kRows, width, x.data(), gamma.data(), beta.data(), y.data(),
                           stats.data());
    // Nonzero starting gradients: the backward adds into all three.
    auto dx = random_floats(kRows * width, 8);
    auto dgamma = random_floats(width, 9);
    auto dbeta = random_floats(width, 10);
    DeviceBuffer<float> d_x(x), d_stats(stats), d_gamma(gamma), d_dy(dy), d_dx(dx),
        d_dgamma(dgamma), d_dbeta(dbeta);
    cpu::layernorm_backward(kRows, width, x.data(), stats.data(), gamma.data(), dy.data(),
                            dx.data(), dgamma.data(), dbeta.data());
    kernels::layernorm_backward(kRows, width, d_x.get(), d_stats.get(), d_gamma.get(), d_dy.get(),
                                d_dx.get(), d_dgamma.get(), d_dbeta.get(), nullptr);
    const std::string w = " w" + std::to_string(width);
    expect_close("layernorm dx" + w, d_dx.download(), dx, test::kFp32);
    expect_close("layernorm dgamma" + w, d_dgamma.download(), dgamma, test::kFp32);
    expect_close("layernorm dbeta" + w, d_dbeta.download(), dbeta, test::kFp32);
  }
}

TEST(CudaKernels, GeluForwardAndBackwardMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t count = 5000;
  const auto x = random_floats(count, 11, -5.0F, 5.0F);
  const auto dy = random_floats(count, 12);
  std::vector<float> y(count), dx(count);
  cpu::gelu_forward(count, x.data(), y.data());
  cpu::gelu_backward(count, x.data(), dy.data(), dx.data());
  DeviceBuffer<float> d_x(x), d_dy(dy), d_y(count), d_dx(count);
  kernels::gelu_forward(count, d_x.get(), d_y.get(), nullptr);
  kernels::gelu_backward(count, d_x.get(), d_dy.get(), d_dx.get(), nullptr);
  // tanhf on the device and std::tanh on the host differ by an ulp or two.
  expect_close("gelu y", d_y.download(), y, test::kFp32);
  expect_close("gelu dx", d_dx.download(), dx, test::kFp32);
}

TEST(CudaKernels, BiasAddAndBiasGradientMatchCpuLoops) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t rows = 45;
  const std::int64_t width = 70;
  const auto bias = random_floats(width, 13);
  auto y = random_floats(rows * width, 14);
  const auto dy = random_floats(rows * width, 15);
  auto dbias = random_floats(width, 16);
  DeviceBuffer<float> d_bias(bias), d_y(y), d_dy(dy), d_dbias(dbias);
  kernels::bias_add(rows, width, d_bias.get(), d_y.get(), nullptr);
  kernels::bias_backward(rows, width, d_dy.get(), d_dbias.get(), nullptr);
  // The loops of exec/cpu/ops/linear.cpp (bias seeded into y, dbias += column sums).
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < width; ++j) {
      y[r * width + j] += bias[j];
      dbias[j] += dy[r * width + j];
    }
  }
  expect_close("bias add", d_y.download(), y, test::kExact);  // one addition each
  expect_close("bias grad", d_dbias.download(), dbias, test::kFp32);
}

TEST(CudaKernels, ResidualAddIsExactAndWorksInPlace) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t count = 1000;
  const auto a = random_floats(count, 17);
  const auto b = random_floats(count, 18);
  std::vector<float> want(count);
  for (std::int64_t i = 0; i < count; ++i) want[i] = a[i] + b[i];
  DeviceBuffer<float> d_a(a), d_b(b), d_out(count);
  kernels::residual_add(count, d_a.get(), d_b.get(), d_out.get(), nullptr);
  expect_close("residual add", d_out.download(), want, test::kExact);
  kernels::residual_add(count, d_a.get(), d_b.get(), d_a.get(), nullptr);
  expect_close("residual add in place", d_a.download(), want, test::kExact);
}

TEST(CudaKernels, EmbeddingGatherAndScatterAddMatchCpuLoops) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const kernels::EmbeddingShape shape{3, 8, 24};
  const std::int32_t vocab = 10;  // fewer ids than tokens: repeated ids sum in dtok
  const std::int64_t tokens = shape.batch * shape.seq;
  const auto ids = test::random_ids(tokens, vocab, 19);
  const auto tok = random_floats(vocab * shape.hidden, 20);
  const auto pos = random_floats(shape.seq * shape.hidden, 21);
  const auto dout = random_floats(tokens * shape.hidden, 22);
  std::vector<float> out(tokens * shape.hidden);
  std::vector<float> dtok(vocab * shape.hidden, 0.0F), dpos(shape.seq * shape.hidden, 0.0F);
  // exec/cpu/layers/embedding.cpp's loops.
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < shape.hidden; ++j) {
      out[i * shape.hidden + j] =
          tok[ids[i] * shape.hidden + j] + pos[(i % shape.seq) * shape.hidden + j];
      dtok[ids[i] * shape.hidden + j] += dout[i * shape.hidden + j];
      dpos[(i % shape.seq) * shape.hidden + j] += dout[i * shape.hidden + j];
    }
  }
  DeviceBuffer<std::int32_t> d_ids(ids);
  DeviceBuffer<float> d_tok(tok), d_pos(pos), d_out(out.size()), d_dout(dout);
  DeviceBuffer<float> d_dtok(std::vector<float>(dtok.size(), 0.0F));
  DeviceBuffer<float> d_dpos(std::vector<float>(dpos.size(), 0.0F));
  kernels::embedding_forward(shape, d_ids.get(), d_tok.get(), d_pos.get(), d_out.get(), nullptr);
  kernels::embedding_backward(shape, d_ids.get(), d_dout.get(), d_dtok.get(), d_dpos.get(),
                              nullptr);
  expect_close("embedding out", d_out.download(), out, test::kExact);
  // Atomic adds: the order of the sums varies.
  expect_close("embedding dtok", d_dtok.download(), dtok, test::kFp32);
  expect_close("embedding dpos", d_dpos.download(), dpos, test::kFp32);
}

TEST(CudaKernels, Bf16ConversionRoundsToNearestEvenLikeTheHost) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t count = 4096;
  const auto x = random_floats(count, 23, -100.0F, 100.0F);
  DeviceBuffer<float> d_x(x), d_back(count);
  DeviceBuffer<Bf16> d_bf(count);
  kernels::f32_to_bf16(count, d_x.get(), d_bf.get(), nullptr);
  kernels::bf16_to_f32(count, d_bf.get(), d_back.get(), nullptr);
  const std::vector<Bf16> bits = d_bf.download();
  std::vector<float> want(count);
  for (std::int64_t i = 0; i < count; ++i) {
    EXPECT_EQ(bits[i], to_bf16(x[i])) << "element " << i << " = " << x[i];
    want[i] = from_bf16(to_bf16(x[i]));
  }
  expect_close("bf16 round trip", d_back.download(), want, test::kExact);
}

}  // namespace
}  // namespace gpipe::exec::cuda
