// The kernels of the llama and DiT layers (RMSNorm, the rotary embedding, SiLU
// and SwiGLU, adaLN's modulation and gated residual, LayerNorm without affine,
// DiT's timestep features and label rows, the token gather without positions)
// against the CPU backend on seeded random inputs: the exec/cpu/ops function
// where there is one, the CPU layer's loop otherwise. Each prints its max abs
// and rel error (kernel_check.hpp) and asserts a stated tolerance.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/modulation.hpp"
#include "exec/cpu/ops/rmsnorm.hpp"
#include "exec/cpu/ops/rope.hpp"
#include "exec/cpu/ops/swiglu.hpp"
#include "exec/cuda/kernels/dit_condition.hpp"
#include "exec/cuda/kernels/embedding.hpp"
#include "exec/cuda/kernels/layernorm.hpp"
#include "exec/cuda/kernels/modulation.hpp"
#include "exec/cuda/kernels/rmsnorm.hpp"
#include "exec/cuda/kernels/rope.hpp"
#include "exec/cuda/kernels/swiglu.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::kRows;
using test::kWidths;
using test::random_floats;

TEST(CudaBlockKernels, RmsNormForwardMatchesCpu) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::int64_t width : kWidths) {
    const auto x = random_floats(kRows * width, 1, -3.0F, 3.0F);
    const auto gamma = random_floats(width, 2, 0.5F, 1.5F);
    std::vector<float> y(kRows * width), rstd(kRows);
    cpu::rmsnorm_forward(kRows, width, x.data(), gamma.data(), y.data(), rstd.data());
    DeviceBuffer<float> d_x(x), d_gamma(gamma), d_y(y.size()), d_rstd(rstd.size());
    kernels::rmsnorm_forward(kRows, width, d_x.get(), d_gamma.get(), d_y.get(), d_rstd.get(),
                             nullptr);
    const std::string w = " w" + std::to_string(width);
    expect_close("rmsnorm y" + w, d_y.download(), y, test::kFp32);
    expect_close("rmsnorm rstd" + w, d_rstd.download(), rstd, test::kFp32);
  }
}

TEST(CudaBlockKernels, RmsNormBackwardAccumulatesLikeCpu) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::int64_t width : kWidths) {
    const auto x = random_floats(kRows * width, 3, -3.0F, 3.0F);
    const auto gamma = random_floats(width, 4, 0.5F, 1.5F);
    const auto dy = random_floats(kRows * width, 5);
    std::vector<float> y(kRows * width), rstd(kRows);
    cpu::rmsnorm_forward(kRows, width, x.data(), gamma.data(), y.data(), rstd.data());
    // Nonzero starting gradients: the backward adds into both.
    auto dx = random_floats(kRows * width, 6);
    auto dgamma = random_floats(width, 7);
    DeviceBuffer<float> d_x(x), d_rstd(rstd), d_gamma(gamma), d_dy(dy), d_dx(dx), d_dgamma(dgamma);
    cpu::rmsnorm_backward(kRows, width, x.data(), rstd.data(), gamma.data(), dy.data(), dx.data(),
                          dgamma.data());
    kernels::rmsnorm_backward(kRows, width, d_x.get(), d_rstd.get(), d_gamma.get(), d_dy.get(),
                              d_dx.get(), d_dgamma.get(), nullptr);
    const std::string w = " w" + std::to_string(width);
    expect_close("rmsnorm dx" + w, d_dx.download(), dx, test::kFp32);
    expect_close("rmsnorm dgamma" + w, d_dgamma.download(), dgamma, test::kFp32);
  }
}

TEST(CudaBlockKernels, LayerNormWithoutAffineMatchesCpu) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::int64_t width : kWidths) {
    const auto x = random_floats(kRows * width, 8, -3.0F, 3.0F);
    const auto dy = random_floats(kRows * width, 9);
    std::vector<float> y(kRows * width), stats(2 * kRows);
    cpu::layernorm_forward(kRows, width, x.data(), nullptr, nullptr, y.data(), stats.data());
    auto dx = random_floats(kRows * width, 10);
    DeviceBuffer<float> d_x(x), d_y(y.size()), d_stats(stats.size()), d_dy(dy), d_dx(dx);
    cpu::layernorm_backward(kRows, width, x.data(), stats.data(), nullptr, dy.data(), dx.data(),
                            nullptr, nullptr);
    kernels::layernorm_forward(kRows, width, d_x.get(), nullptr, nullptr, d_y.get(), d_stats.get(),
                               nullptr);
    kernels::layernorm_backward(kRows, width, d_x.get(), d_stats.get(), nullptr, d_dy.get(),
                                d_dx.get(), nullptr, nullptr, nullptr);
    const std::string w = " w" + std::to_string(width);
    expect_close("layernorm (no affine) y" + w, d_y.download(), y, test::kFp32);
    expect_close("layernorm (no affine) stats" + w, d_stats.download(), stats, test::kFp32);
    expect_close("layernorm (no affine) dx" + w, d_dx.download(), dx, test::kFp32);
  }
}

TEST(CudaBlockKernels, RopeRotatesQAndKInsideAPackedRowLikeCpu) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // Llama's packed qkv with A 4 heads of 8 and G 2: rows of 64; q at column 0,
  // k at 32; the v columns must come back untouched.
  for (const double theta : {10000.0, 500000.0}) {
    const kernels::RopeShape q{.batch = 2, .seq = 40, .heads = 4, .head_dim = 8, .row_stride = 64,
                               .theta = theta};
    kernels::RopeShape k = q;
    k.heads = 2;
    const auto qkv = random_floats(2 * 40 * 64, 11, -2.0F, 2.0F);
    std::vector<float> forward = qkv;
    cpu::rope_forward(q, forward.data());
    cpu::rope_forward(k, forward.data() + 32);
    std::vector<float> backward = qkv;
    cpu::rope_backward(q, backward.data());
    cpu::rope_backward(k, backward.data() + 32);
    DeviceBuffer<float> d_forward(qkv), d_backward(qkv);
    kernels::rope_forward(q, d_forward.get(), nullptr);
    kernels::rope_forward(k, d_forward.get() + 32, nullptr);
    kernels::rope_backward(q, d_backward.get(), nullptr);
    kernels::rope_backward(k, d_backward.get() + 32, nullptr);
    // The same cos and sin (double, rounded once); only the products' rounding may differ.
    const std::string t = " theta " + std::to_string(static_cast<long>(theta));
    const std::vector<float> got = d_forward.download();
    expect_close("rope forward" + t, got, forward, test::kFp32);
    expect_close("rope backward" + t, d_backward.download(), backward, test::kFp32);
    for (std::int64_t token = 0; token < 2 * 40; ++token) {
      for (std::int64_t c = 48; c < 64; ++c) ASSERT_EQ(got[token * 64 + c], qkv[token * 64 + c]);
    }
  }
}

TEST(CudaBlockKernels, SiluAndSwigluMatchCpuIncludingTheTails) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t count = 5000;
  auto gate = random_floats(count, 12, -12.0F, 12.0F);
  // The tails: sigmoid cut to 0 below -87, and large positive values.
  gate[0] = -86.0F;
  gate[1] = -88.0F;
  gate[2] = -1e30F;
  gate[3] = 90.0F;
  gate[4] = 0.0F;
  const auto up = random_floats(count, 13);
  const auto dh = random_floats(count, 14);
  std::vector<float> h(count), dgate(count), dup(count), y(count), dx(count);
  cpu::swiglu_forward(count, gate.data(), up.data(), h.data());
  cpu::swiglu_backward(count, gate.data(), up.data(), dh.data(), dgate.data(), dup.data());
  cpu::silu_forward(count, gate.data(), y.data());
  cpu::silu_backward(count, gate.data(), dh.data(), dx.data());
  DeviceBuffer<float> d_gate(gate), d_up(up), d_dh(dh), d_h(count), d_y(count), d_dx(count);
  kernels::swiglu_forward(count, d_gate.get(), d_up.get(), d_h.get(), nullptr);
  kernels::silu_forward(count, d_gate.get(), d_y.get(), nullptr);
  kernels::silu_backward(count, d_gate.get(), d_dh.get(), d_dx.get(), nullptr);
  // In place, as llama_block does: d gate into gate, d up into up.
  kernels::swiglu_backward(count, d_gate.get(), d_up.get(), d_dh.get(), d_gate.get(), d_up.get(),
                           nullptr);
  // expf on the device, the CPU's own polynomial exponential: an ulp or two.
  expect_close("swiglu h", d_h.download(), h, test::kFp32);
  expect_close("swiglu dgate (in place)", d_gate.download(), dgate, test::kFp32);
  expect_close("swiglu dup (in place)", d_up.download(), dup, test::kFp32);
  expect_close("silu y", d_y.download(), y, test::kFp32);
  expect_close("silu dx", d_dx.download(), dx, test::kFp32);
}

// b 3 samples of T 5 tokens, H 40 (over a warp), vectors at a stride of 6H
// (dit_block's modulation row), the slices at offsets 0 (shift), H (scale)
// and 2H (gate).
constexpr kernels::ModulationShape kMod{.batch = 3, .tokens = 5, .hidden = 40, .mod_stride = 240};
constexpr std::int64_t kTokens = 3 * 5 * 40;

TEST(CudaBlockKernels, ModulationMatchesCpuAndAddsIntoItsSlices) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto xhat = random_floats(kTokens, 15, -2.0F, 2.0F);
  const auto mod = random_floats(3 * 240, 16);
  const auto dy = random_floats(kTokens, 17);
  auto dmod = random_floats(3 * 240, 18);  // nonzero: the sums add into it
  std::vector<float> y(kTokens), dxhat(kTokens);
  cpu::modulate_forward(3, 5, 40, xhat.data(), mod.data(), mod.data() + 40, 240, y.data());
  DeviceBuffer<float> d_xhat(xhat), d_mod(mod), d_y(kTokens), d_dy(dy), d_dmod(dmod);
  kernels::modulate_forward(kMod, d_xhat.get(), d_mod.get(), d_mod.get() + 40, d_y.get(), nullptr);
  cpu::modulate_backward(3, 5, 40, xhat.data(), mod.data() + 40, 240, dy.data(), dxhat.data(),
                         dmod.data(), dmod.data() + 40);
  // dxhat in place of dy, as dit_block does.
  kernels::modulate_backward(kMod, d_xhat.get(), d_mod.get() + 40, d_dy.get(), d_dy.get(),
                             d_dmod.get(), d_dmod.get() + 40, nullptr);
  expect_close("modulate y", d_y.download(), y, test::kFp32);
  expect_close("modulate dxhat (in place)", d_dy.download(), dxhat, test::kFp32);
  // Every slice of dmod: shift's and scale's summed into, gate's and the rest untouched.
  expect_close("modulate dmod", d_dmod.download(), dmod, test::kFp32);
}

TEST(CudaBlockKernels, GatedResidualMatchesCpuAndAddsIntoItsSlice) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto x = random_floats(kTokens, 19);
  const auto f = random_floats(kTokens, 20);
  const auto mod = random_floats(3 * 240, 21);
  const auto dy = random_floats(kTokens, 22);
  auto dmod = random_floats(3 * 240, 23);  // nonzero: the sums add into it
  DeviceBuffer<float> d_x(x), d_f(f), d_mod(mod), d_y(kTokens), d_dy(dy), d_df(kTokens),
      d_dmod(dmod);
  std::vector<float> y(kTokens), df(kTokens);
  cpu::gated_residual_forward(3, 5, 40, x.data(), mod.data() + 80, 240, f.data(), y.data());
  cpu::gated_residual_backward(3, 5, 40, f.data(), mod.data() + 80, 240, dy.data(), df.data(),
                               dmod.data() + 80);
  kernels::gated_residual_forward(kMod, d_x.get(), d_mod.get() + 80, d_f.get(), d_y.get(), nullptr);
  kernels::gated_residual_backward(kMod, d_f.get(), d_mod.get() + 80, d_dy.get(), d_df.get(),
                                   d_dmod.get() + 80, nullptr);
  expect_close("gated residual y", d_y.download(), y, test::kFp32);
  expect_close("gated residual df", d_df.download(), df, test::kFp32);
  expect_close("gated residual dmod", d_dmod.download(), dmod, test::kFp32);
}

TEST(CudaBlockKernels, TimestepFeaturesAreTheCpusReadFromStridedRows) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // 6 input rows of 10 floats, the timestep at column 8 (as dit_embed's input).
  const std::int64_t count = 6;
  auto rows = random_floats(count * 10, 24);
  std::vector<float> steps(count);
  for (std::int64_t n = 0; n < count; ++n) {
    steps[n] = static_cast<float>(n * 199);  // 0 .. 995
    rows[n * 10 + 8] = steps[n];
  }
  std::vector<float> want(count * 256);
  cpu::timestep_embedding(count, steps.data(), 256, 10000.0, want.data());
  DeviceBuffer<float> d_rows(rows), d_out(want.size());
  kernels::timestep_embedding(count, d_rows.get() + 8, 10, 256, 10000.0, d_out.get(), nullptr);
  // Both in double, rounded once: at most an ulp apart where the double
  // cos/sin of the two libraries round differently.
  expect_close("timestep features", d_out.download(), want, test::kFp32);
}

TEST(CudaBlockKernels, LabelRowsGatherAndSumInSampleOrder) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // 6 samples, 4 classes (labels repeat), H 40; label n at column 9 of row n
  // (stride 10), rows of out 3 H apart.
  const std::int64_t b = 6, h = 40;
  const kernels::LabelRows shape{.batch = b, .hidden = h, .label_stride = 10, .row_stride = 3 * h};
  auto input = random_floats(b * 10, 25);
  const std::vector<std::int64_t> labels{0, 3, 1, 3, 2, 3};
  for (std::int64_t n = 0; n < b; ++n) input[n * 10 + 9] = static_cast<float>(labels[n]);
  const auto table = random_floats(4 * h, 26);
  const auto c = random_floats(b * h, 27);
  const auto drows = random_floats(b * 3 * h, 28);
  auto out = random_floats(b * 3 * h, 29);
  auto dtable = random_floats(4 * h, 30);
  DeviceBuffer<float> d_input(input), d_table(table), d_c(c), d_out(out), d_drows(drows),
      d_dtable(dtable);
  // exec/cpu/layers/dit_embed.cpp's loops.
  for (std::int64_t n = 0; n < b; ++n) {
    for (std::int64_t j = 0; j < h; ++j) {
      out[n * 3 * h + j] = c[n * h + j] + table[labels[n] * h + j];
      dtable[labels[n] * h + j] += drows[n * 3 * h + j];
    }
  }
  kernels::label_rows_forward(shape, d_input.get() + 9, d_table.get(), d_c.get(), d_out.get(),
                              nullptr);
  kernels::label_rows_backward(shape, d_input.get() + 9, d_drows.get(), d_dtable.get(), nullptr);
  // One addition per element, and the gradient's sums in sample order: exact.
  expect_close("label rows (other rows untouched)", d_out.download(), out, test::kExact);
  expect_close("label rows dtable", d_dtable.download(), dtable, test::kExact);
}

TEST(CudaBlockKernels, TokenGatherWithoutPositionsMatchesTheCpuLoops) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const kernels::EmbeddingShape shape{3, 8, 24};
  const std::int32_t vocab = 10;  // repeated ids sum in dtok
  const std::int64_t tokens = shape.batch * shape.seq;
  const auto ids = test::random_ids(tokens, vocab, 31);
  const auto tok = random_floats(vocab * shape.hidden, 32);
  const auto dout = random_floats(tokens * shape.hidden, 33);
  std::vector<float> out(tokens * shape.hidden), dtok(vocab * shape.hidden, 0.0F);
  // exec/cpu/layers/token_embedding.cpp's loops.
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < shape.hidden; ++j) {
      out[i * shape.hidden + j] = tok[ids[i] * shape.hidden + j];
      dtok[ids[i] * shape.hidden + j] += dout[i * shape.hidden + j];
    }
  }
  DeviceBuffer<std::int32_t> d_ids(ids);
  DeviceBuffer<float> d_tok(tok), d_out(out.size()), d_dout(dout);
  DeviceBuffer<float> d_dtok(std::vector<float>(dtok.size(), 0.0F));
  kernels::embedding_forward(shape, d_ids.get(), d_tok.get(), nullptr, d_out.get(), nullptr);
  kernels::embedding_backward(shape, d_ids.get(), d_dout.get(), d_dtok.get(), nullptr, nullptr);
  expect_close("token gather", d_out.download(), out, test::kExact);  // a copy
  expect_close("token gather dtok", d_dtok.download(), dtok, test::kFp32);  // atomics' order
}

}  // namespace
}  // namespace gpipe::exec::cuda
