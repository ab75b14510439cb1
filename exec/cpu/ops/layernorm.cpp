#include "exec/cpu/ops/layernorm.hpp"

#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

// Each row's loops are SIMD loops (reductions included, so the sums are
// reassociated: within float rounding of the sequential sums).
namespace {

GPIPE_VECTOR_CLONES void layernorm_forward_rows(std::int64_t rows, std::int64_t width, const float* x,
                                                const float* gamma, const float* beta, float* y,
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
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

}  // namespace

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats) {
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
      const float g = dyr[j] * gamma[j];
      mean_g += g;
      mean_g_xhat += g * xhat;
      dgamma[j] += dyr[j] * xhat;
      dbeta[j] += dyr[j];
    }
    mean_g *= inv_width;
    mean_g_xhat *= inv_width;
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = (xr[j] - mean) * rstd;
      dxr[j] += rstd * (dyr[j] * gamma[j] - mean_g - xhat * mean_g_xhat);
    }
  }
}

}  // namespace gpipe::exec::cpu
