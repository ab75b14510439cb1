// RMSNorm on the device (Llama's), the same contract as exec/cpu/ops/rmsnorm.hpp:
// eps 1e-5, a gain gamma and no bias, one rstd per row kept ([rows]), the
// backward ADDING into dx and dgamma. Device pointers.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// y = x * rstd * gamma per row of x[rows, width]; rstd[r] = 1 / sqrt(mean_j x[r][j]^2 + eps).
void rmsnorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                     float* y, float* rstd, StreamHandle stream);

// dx += d(loss)/dx; dgamma += sum_r dy * x * rstd (a column reduction in a
// fixed order: deterministic).
void rmsnorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* rstd,
                      const float* gamma, const float* dy, float* dx, float* dgamma,
                      StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
