// The two loss layers on the device, the same contracts as the CPU backend:
// softmax cross-entropy (exec/cpu/ops/cross_entropy.hpp: logits become the
// probabilities in place, loss from log-sum-exp) and mse (exec/cpu/layers/mse_loss.cpp:
// per-sample mean of squared errors, summed in double). Device pointers.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// logits[rows, vocab] become probabilities; loss[r] = log(sum exp) + max - logit[target[r]].
// Targets must lie in [0, vocab) (checked by the caller on the host).
void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss, StreamHandle stream);

// dlogits[r] = (p[r] - onehot(target[r])) * scale[r]; dlogits may be probs (in place).
void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits,
                            StreamHandle stream);

// loss[n] = mean_j (x[n, j] - t[n, j])^2 over x, t [batch, width].
void mse_forward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                 float* loss, StreamHandle stream);

// dx[n, j] = (2 g[n] / width) (x - t), overwritten.
void mse_backward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                  const float* grad_loss, float* dx, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
