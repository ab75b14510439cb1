// The loss kernels (softmax cross-entropy, mse) and the optimizer steps
// against the CPU backend: exec/cpu/cross_entropy, the mse_loss layer's loops,
// and exec::OptimizerState itself, which the device steps match bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "exec/cpu/ops/cross_entropy.hpp"
#include "exec/cpu/optimizer.hpp"
#include "exec/cuda/kernels/losses.hpp"
#include "exec/cuda/kernels/optimizer.hpp"
#include "tests/cuda/gpu/kernel_check.hpp"

namespace gpipe::exec::cuda {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

TEST(CudaLosses, CrossEntropyForwardAndBackwardMatchCpu) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // A vocabulary wider than one block (256 threads) and one narrower than a warp.
  for (const std::int64_t vocab : {std::int64_t{19}, std::int64_t{1000}}) {
    const std::int64_t rows = 12;
    auto logits = random_floats(rows * vocab, 1, -8.0F, 8.0F);
    const auto targets = test::random_ids(rows, static_cast<std::int32_t>(vocab), 2);
    const auto scale = random_floats(rows, 3, 0.1F, 1.0F);
    DeviceBuffer<float> d_logits(logits), d_loss(rows), d_scale(scale);
    DeviceBuffer<std::int32_t> d_targets(targets);
    std::vector<float> loss(rows);
    cpu::cross_entropy_forward(rows, vocab, logits.data(), targets.data(), loss.data());
    kernels::cross_entropy_forward(rows, vocab, d_logits.get(), d_targets.get(), d_loss.get(),
                                   nullptr);
    const std::string v = " v" + std::to_string(vocab);
    expect_close("cross-entropy loss" + v, d_loss.download(), loss, test::kFp32);
    expect_close("cross-entropy probs" + v, d_logits.download(), logits, test::kFp32);

    // Backward in place on the probabilities, from the CPU's probabilities so
    // the check is of the backward alone (one multiply and one subtract: exact).
    d_logits.upload(logits);
    cpu::cross_entropy_backward(rows, vocab, logits.data(), targets.data(), scale.data(),
                                logits.data());
    kernels::cross_entropy_backward(rows, vocab, d_logits.get(), d_targets.get(), d_scale.get(),
                                    d_logits.get(), nullptr);
    expect_close("cross-entropy dlogits" + v, d_logits.download(), logits, test::kExact);
  }
}

TEST(CudaLosses, MseForwardAndBackwardMatchCpuLoops) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::int64_t batch = 9;
  const std::int64_t width = 300;
  const auto x = random_floats(batch * width, 4);
  const auto t = random_floats(batch * width, 5);
  const auto g = random_floats(batch, 6);
  // exec/cpu/layers/mse_loss.cpp's loops: the sum in double, the gradient in float.
  std::vector<float> loss(batch), dx(batch * width);
  for (std::int64_t n = 0; n < batch; ++n) {
    double sum = 0.0;
    for (std::int64_t j = n * width; j < (n + 1) * width; ++j) {
      const double e = static_cast<double>(x[j]) - t[j];
      sum += e * e;
    }
    loss[n] = static_cast<float>(sum / static_cast<double>(width));
    const float scale = 2.0F * g[n] / static_cast<float>(width);
    for (std::int64_t j = n * width; j < (n + 1) * width; ++j) dx[j] = scale * (x[j] - t[j]);
  }
  DeviceBuffer<float> d_x(x), d_t(t), d_g(g), d_loss(batch), d_dx(batch * width);
  kernels::mse_forward(batch, width, d_x.get(), d_t.get(), d_loss.get(), nullptr);
  kernels::mse_backward(batch, width, d_x.get(), d_t.get(), d_g.get(), d_dx.get(), nullptr);
  // Summed in double in another order, then rounded to float: equal within one float ulp.
  expect_close("mse loss", d_loss.download(), loss, test::Tolerance{0.0, 2.4e-7});
  expect_close("mse dx", d_dx.download(), dx, test::kExact);
}

// Three steps of exec::OptimizerState and of the device step on the same
// weights and gradients: the weights, and the zeroed gradients, agree exactly.
void expect_optimizer_matches(models::Optimizer kind) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = 0.05F;
  const std::int64_t count = 777;
  std::vector<cpu::Parameter> params(1);
  params[0].value = Tensor({count});
  params[0].grad = Tensor({count});
  const auto w0 = random_floats(count, 7);
  std::copy(w0.begin(), w0.end(), params[0].value.data());
  cpu::OptimizerState state(config, params);
  DeviceBuffer<float> d_w(w0), d_g(count);
  DeviceBuffer<float> d_m(std::vector<float>(count, 0.0F)), d_v(std::vector<float>(count, 0.0F));
  const kernels::AdamwHyper hyper{config.learning_rate, config.beta1, config.beta2, config.epsilon,
                                  config.weight_decay};
  for (int step = 1; step <= 3; ++step) {
    const auto g = random_floats(count, 10 + step);
    std::copy(g.begin(), g.end(), params[0].grad.data());
    d_g.upload(g);
    state.step(params);
    switch (kind) {
      case models::Optimizer::sgd:
        kernels::sgd_step(count, config.learning_rate, d_w.get(), d_g.get(), nullptr);
        break;
      case models::Optimizer::momentum:
        kernels::momentum_step(count, config.learning_rate, config.momentum, d_w.get(), d_g.get(),
                               d_m.get(), nullptr);
        break;
      case models::Optimizer::adamw:
        kernels::adamw_step(count, kernels::adamw_scalars(hyper, step), d_w.get(), d_g.get(),
                            d_m.get(), d_v.get(), nullptr);
        break;
    }
    const std::span<const float> w = std::as_const(params[0].value).f32();
    const std::string name = std::string(models::to_string(kind)) + " step " + std::to_string(step);
    expect_close(name + " w", d_w.download(), std::vector<float>(w.begin(), w.end()), test::kExact);
    expect_close(name + " g zeroed", d_g.download(), std::vector<float>(count, 0.0F), test::kExact);
  }
}

TEST(CudaOptimizers, SgdMatchesTheCpuStepExactly) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_optimizer_matches(models::Optimizer::sgd);
}

TEST(CudaOptimizers, MomentumMatchesTheCpuStepExactly) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_optimizer_matches(models::Optimizer::momentum);
}

TEST(CudaOptimizers, AdamwMatchesTheCpuStepExactly) {
  if (gpipe::exec::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_optimizer_matches(models::Optimizer::adamw);
}

}  // namespace
}  // namespace gpipe::exec::cuda
