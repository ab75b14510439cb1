#include "exec/cpu/ops/rmsnorm.hpp"

#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

// Each row's loops are SIMD loops (reductions included, so the sums are
// reassociated: within float rounding of the sequential sums).
namespace {

GPIPE_VECTOR_CLONES void rmsnorm_forward_rows(std::int64_t rows, std::int64_t width, const float* x,
                                              const float* gamma, float* y, float* rstd) {
  const float inv_width = 1.0F / static_cast<float>(width);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    float* yr = y + r * width;
    float squares = 0.0F;
#pragma omp simd reduction(+ : squares)
    for (std::int64_t j = 0; j < width; ++j) squares += xr[j] * xr[j];
    const float s = 1.0F / std::sqrt(squares * inv_width + kRmsNormEps);
    // (x * rstd) * gamma, in Llama's order: normalise, then scale.
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) yr[j] = xr[j] * s * gamma[j];
    rstd[r] = s;
  }
}

}  // namespace

void rmsnorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                     float* y, float* rstd) {
  // Rows are independent: split over the rank's team.
  for_element_ranges(rows, width, [&](std::int64_t begin, std::int64_t end) {
    rmsnorm_forward_rows(end - begin, width, x + begin * width, gamma, y + begin * width,
                         rstd + begin);
  });
}

// On one thread: every row adds into dgamma (as layernorm_backward).
GPIPE_VECTOR_CLONES void rmsnorm_backward(std::int64_t rows, std::int64_t width, const float* x,
                                          const float* rstd, const float* gamma, const float* dy,
                                          float* dx, float* dgamma) {
  const float inv_width = 1.0F / static_cast<float>(width);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float* dyr = dy + r * width;
    float* dxr = dx + r * width;
    const float s = rstd[r];
    // rstd depends on every x of the row (d rstd / dx_j = -rstd^3 x_j / width), so
    // dx = rstd * (g - x_hat * mean(g * x_hat)), g = dy * gamma, x_hat = x * rstd.
    float mean_g_xhat = 0.0F;
#pragma omp simd reduction(+ : mean_g_xhat)
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = xr[j] * s;
      mean_g_xhat += dyr[j] * gamma[j] * xhat;
      dgamma[j] += dyr[j] * xhat;
    }
    mean_g_xhat *= inv_width;
#pragma omp simd
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = xr[j] * s;
      dxr[j] += s * (dyr[j] * gamma[j] - xhat * mean_g_xhat);
    }
  }
}

}  // namespace gpipe::exec::cpu
