#include "exec/cpu/ops/layernorm.hpp"

#include <cassert>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

// Each row's loops are SIMD loops (reductions included, so the sums are
// reassociated: within float rounding of the sequential sums).
//
// With and without the affine, and with and without its gradients, are one
// template each, instantiated per case so that no loop tests a pointer per
// element (a branch there keeps it scalar); the affine case with gradients is
// the code it was before the others were added.
namespace {

template <bool kAffine>
[[gnu::always_inline]] inline void layernorm_forward_rows_of(std::int64_t rows, std::int64_t width,
                                                             const float* x, const float* gamma,
                                                             const float* beta, float* y,
                                                             float* stats) {
  const float inv_width = 1.0F / static_cast<float>(width);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    float sum = 0.0F;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < width; ++j) sum += xr[j];
    const float mean = sum * inv_width;
    // Two passes (centred variance) rather than E[x^2] - mean^2, which cancels badly.
    float squares = 0.0F;
#pragma omp simd reduction(+ : squares)
    for (std::int64_t j = 0; j < width; ++j) {
      const float c = xr[j] - mean;
      squares += c * c;
    }
    const float rstd = 1.0F / std::sqrt(squares * inv_width + kLayerNormEps);
    if constexpr (kAffine) {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    } else {
      // "+ 0" as beta 0 would (it turns -0 into +0): bit for bit gamma 1, beta 0.
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) yr[j] = (xr[j] - mean) * rstd + 0.0F;
    }
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

GPIPE_VECTOR_CLONES void layernorm_forward_rows(std::int64_t rows, std::int64_t width, const float* x,
                                                const float* gamma, const float* beta, float* y,
                                                float* stats) {
  if (gamma != nullptr) {
    layernorm_forward_rows_of<true>(rows, width, x, gamma, beta, y, stats);
  } else {
    layernorm_forward_rows_of<false>(rows, width, x, nullptr, nullptr, y, stats);
  }
}

template <bool kAffine, bool kParamGrads>
[[gnu::always_inline]] inline void layernorm_backward_rows_of(std::int64_t rows, std::int64_t width,
                                                              const float* x, const float* stats,
                                                              const float* gamma, const float* dy,
                                                              float* dx, float* dgamma,
                                                              float* dbeta) {
  const float inv_width = 1.0F / static_cast<float>(width);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float* dyr = dy + r * width;
    float* dxr = dx + r * width;
    const float mean = stats[2 * r];
    const float rstd = stats[2 * r + 1];
    // dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * gamma.
    float mean_g = 0.0F;
    float mean_g_xhat = 0.0F;
#pragma omp simd reduction(+ : mean_g, mean_g_xhat)
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = (xr[j] - mean) * rstd;
      float g = dyr[j];
      if constexpr (kAffine) g *= gamma[j];
      mean_g += g;
      mean_g_xhat += g * xhat;
      if constexpr (kParamGrads) {
        dgamma[j] += dyr[j] * xhat;
        dbeta[j] += dyr[j];
      }
    }
    mean_g *= inv_width;
    mean_g_xhat *= inv_width;
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = (xr[j] - mean) * rstd;
      // One expression each, as before: clang contracts a product into an FMA
      // only within an expression, so g as a variable would round differently.
      if constexpr (kAffine) {
        dxr[j] += rstd * (dyr[j] * gamma[j] - mean_g - xhat * mean_g_xhat);
      } else {
        dxr[j] += rstd * (dyr[j] - mean_g - xhat * mean_g_xhat);
      }
    }
  }
}

}  // namespace

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats) {
  assert((gamma == nullptr) == (beta == nullptr));
  // Rows are independent: split over the rank's team.
  for_element_ranges(rows, width, [&](std::int64_t begin, std::int64_t end) {
    layernorm_forward_rows(end - begin, width, x + begin * width, gamma, beta, y + begin * width,
                           stats + 2 * begin);
  });
}

// On one thread: every row adds into dgamma and dbeta.
GPIPE_VECTOR_CLONES void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x,
                                            const float* stats, const float* gamma, const float* dy,
                                            float* dx, float* dgamma, float* dbeta) {
  assert((dgamma == nullptr) == (dbeta == nullptr));
  if (gamma == nullptr) {
    assert(dgamma == nullptr);
    layernorm_backward_rows_of<false, false>(rows, width, x, stats, nullptr, dy, dx, nullptr,
                                             nullptr);
  } else if (dgamma == nullptr) {
    layernorm_backward_rows_of<true, false>(rows, width, x, stats, gamma, dy, dx, nullptr, nullptr);
  } else {
    layernorm_backward_rows_of<true, true>(rows, width, x, stats, gamma, dy, dx, dgamma, dbeta);
  }
}

}  // namespace gpipe::exec::cpu
