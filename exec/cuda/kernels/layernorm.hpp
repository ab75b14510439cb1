// LayerNorm on the device, the same contract as exec/cpu/ops/layernorm.hpp: eps
// 1e-5, biased variance, stats [rows, 2] = (mean, rstd) per row, backward
// ADDING into dx, dgamma and dbeta; gamma and beta both null is a LayerNorm
// without affine (DiT's, y = (x - mean) rstd, bit for bit gamma 1 and beta 0).
// All pointers are device memory.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats, StreamHandle stream);

// dx += d(loss)/dx, dgamma += sum_r dy * x_hat, dbeta += sum_r dy. The
// parameter sums are column reductions in a fixed order (deterministic).
// gamma null: no affine, and dgamma and dbeta must be null too; dgamma and
// dbeta both null with a gamma: those sums are skipped (a frozen affine).
// Throws std::invalid_argument for other mixes of null pointers.
void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta,
                        StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
