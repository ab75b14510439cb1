// LayerNorm over the last dimension (eps 1e-5, affine gamma and beta, or none:
// DiT's norms, whose scale and shift come from adaLN instead), forward and
// backward. The statistics are kept as [rows, 2] (mean, rstd) pairs: that is
// the "mean and rstd" tensor models/model.hpp counts in every stash, and with x
// it is all the backward needs to rebuild the normalised values.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

inline constexpr float kLayerNormEps = 1e-5F;

// y = (x - mean) * rstd * gamma + beta per row of x[rows,width];
// stats[2r] = mean, stats[2r+1] = rstd = 1 / sqrt(var + eps) (biased variance).
// gamma and beta both nullptr: no affine, y = (x - mean) * rstd, bit for bit
// what gamma 1 and beta 0 give.
void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats);

// From dy[rows,width]: dx += d(loss)/dx (ADDED, so a residual branch's gradient
// can be summed in place), dgamma += sum of dy * x_hat, dbeta += sum of dy.
// gamma nullptr: no affine (gamma 1), and dgamma and dbeta must be nullptr too;
// dgamma and dbeta both nullptr with a gamma: those sums are skipped (a frozen
// affine).
void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta);

}  // namespace gpipe::exec::cpu
