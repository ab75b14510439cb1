// The optimizer steps on the device, bit-for-bit the arithmetic of
// exec/cpu/optimizer.cpp: SGD (w -= lr g), momentum as PyTorch (v = mu v + g;
// w -= lr v) and AdamW as torch.optim.AdamW (decoupled decay, bias
// corrections computed on the host in double, as the CPU step does). Each
// step zeroes the gradient, as OptimizerState::step does. Device pointers.
#pragma once

#include <cmath>
#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

struct AdamwHyper {
  float learning_rate = 1e-3F;
  float beta1 = 0.9F;
  float beta2 = 0.999F;
  float epsilon = 1e-8F;
  float weight_decay = 0.01F;
};

// The per-step scalars of one AdamW step, exactly as exec/cpu/optimizer.cpp forms them.
struct AdamwScalars {
  float beta1 = 0.0F;
  float beta2 = 0.0F;
  float one_minus_beta1 = 0.0F;
  float one_minus_beta2 = 0.0F;
  float epsilon = 0.0F;
  float decay = 0.0F;             // 1 - lr * weight_decay
  float step_size = 0.0F;         // lr / (1 - beta1^t)
  float sqrt_correction2 = 0.0F;  // sqrt(1 - beta2^t)
};

// step counts from 1 (the first step after construction).
[[nodiscard]] inline AdamwScalars adamw_scalars(const AdamwHyper& hyper, int step) {
  const double correction1 = 1.0 - std::pow(static_cast<double>(hyper.beta1), step);
  const double correction2 = 1.0 - std::pow(static_cast<double>(hyper.beta2), step);
  AdamwScalars s;
  s.beta1 = hyper.beta1;
  s.beta2 = hyper.beta2;
  s.one_minus_beta1 = 1.0F - hyper.beta1;
  s.one_minus_beta2 = 1.0F - hyper.beta2;
  s.epsilon = hyper.epsilon;
  s.decay = 1.0F - hyper.learning_rate * hyper.weight_decay;
  s.step_size = static_cast<float>(hyper.learning_rate / correction1);
  s.sqrt_correction2 = static_cast<float>(std::sqrt(correction2));
  return s;
}

void sgd_step(std::int64_t count, float learning_rate, float* w, float* g, StreamHandle stream);

// v starts at 0 (the caller zeroes it), so the first step is v = g.
void momentum_step(std::int64_t count, float learning_rate, float momentum, float* w, float* g,
                   float* v, StreamHandle stream);

// m and v start at 0 (zeroed by the caller).
void adamw_step(std::int64_t count, const AdamwScalars& scalars, float* w, float* g, float* m,
                float* v, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
