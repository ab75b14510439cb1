// RMSNorm over the last dimension (Llama's: eps 1e-5, a gain gamma and no
// bias), forward and backward. Unlike LayerNorm there is no mean to keep: the
// statistics are one rstd per row, and with x it is all the backward needs.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

inline constexpr float kRmsNormEps = 1e-5F;

// y = x * rstd * gamma per row of x[rows,width];
// rstd[r] = 1 / sqrt(mean_j x[r][j]^2 + eps), rstd is [rows].
void rmsnorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                     float* y, float* rstd);

// From dy[rows,width]: dx += d(loss)/dx (ADDED, as layernorm_backward, so a
// residual branch's gradient can be summed in place), dgamma += sum over rows
// of dy * x * rstd.
void rmsnorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* rstd,
                      const float* gamma, const float* dy, float* dx, float* dgamma);

}  // namespace gpipe::exec::cpu
