// LayerNorm forward and backward (see layernorm.hpp). One warp per row for the
// row statistics and dx, as llm.c's layernorm kernels; the parameter
// gradients are a separate column reduction so no atomics are needed. With
// and without the affine are one template each (as exec/cpu/ops/layernorm.cpp),
// so that the affine case is the code it was before DiT's norms were added.
#include <stdexcept>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/column_sum.cuh"
#include "exec/cuda/kernels/device_math.cuh"
#include "exec/cuda/kernels/layernorm.hpp"

namespace gpipe::exec::cuda::kernels {

namespace {

constexpr float kEps = 1e-5F;  // exec/cpu/ops/layernorm.hpp's kLayerNormEps

template <bool kAffine>
__global__ void layernorm_forward_kernel(std::int64_t rows, std::int64_t width, const float* x,
                                         const float* gamma, const float* beta, float* y,
                                         float* stats) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* xr = x + r * width;
  float sum = 0.0F;
  for (std::int64_t j = lane; j < width; j += 32) sum += xr[j];
  const float mean = warp_sum(sum) / static_cast<float>(width);
  // Centred second pass, as the CPU version, rather than E[x^2] - mean^2.
  float squares = 0.0F;
  for (std::int64_t j = lane; j < width; j += 32) {
    const float c = xr[j] - mean;
    squares += c * c;
  }
  const float rstd = rsqrtf(warp_sum(squares) / static_cast<float>(width) + kEps);
  float* yr = y + r * width;
  for (std::int64_t j = lane; j < width; j += 32) {
    if constexpr (kAffine) {
      yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    } else {
      yr[j] = (xr[j] - mean) * rstd + 0.0F;  // "+ 0" as beta 0 would: -0 becomes +0, as on the CPU
    }
  }
  if (lane == 0) {
    stats[2 * r] = mean;
    stats[2 * r + 1] = rstd;
  }
}

template <bool kAffine>
__global__ void layernorm_backward_dx_kernel(std::int64_t rows, std::int64_t width, const float* x,
                                             const float* stats, const float* gamma,
                                             const float* dy, float* dx) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* xr = x + r * width;
  const float* dyr = dy + r * width;
  const float mean = stats[2 * r];
  const float rstd = stats[2 * r + 1];
  // dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)), g = dy * gamma (dy without affine).
  float sum_g = 0.0F;
  float sum_g_xhat = 0.0F;
  for (std::int64_t j = lane; j < width; j += 32) {
    const float g = kAffine ? dyr[j] * gamma[j] : dyr[j];
    sum_g += g;
    sum_g_xhat += g * ((xr[j] - mean) * rstd);  // g * x_hat, as the CPU groups it
  }
  const float mean_g = warp_sum(sum_g) / static_cast<float>(width);
  const float mean_g_xhat = warp_sum(sum_g_xhat) / static_cast<float>(width);
  float* dxr = dx + r * width;
  for (std::int64_t j = lane; j < width; j += 32) {
    const float xhat = (xr[j] - mean) * rstd;
    if constexpr (kAffine) {
      dxr[j] += rstd * (dyr[j] * gamma[j] - mean_g - xhat * mean_g_xhat);
    } else {
      dxr[j] += rstd * (dyr[j] - mean_g - xhat * mean_g_xhat);
    }
  }
}

// The terms of the two parameter gradients for element (r, j).
struct ParamTerms {
  const float* x;
  const float* stats;
  const float* dy;
  std::int64_t width;
  __device__ float2 operator()(std::int64_t r, std::int64_t j) const {
    const float xhat = (x[r * width + j] - stats[2 * r]) * stats[2 * r + 1];
    const float d = dy[r * width + j];
    return make_float2(d * xhat, d);
  }
};

}  // namespace

void layernorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                       const float* beta, float* y, float* stats, StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if ((gamma == nullptr) != (beta == nullptr)) {
    throw std::invalid_argument("layernorm_forward: gamma and beta must both be given or both be null");
  }
  if (rows == 0 || width == 0) return;
  if (gamma != nullptr) {
    layernorm_forward_kernel<true><<<warp_row_blocks(rows), kThreads, 0, stream>>>(
        rows, width, x, gamma, beta, y, stats);
  } else {
    layernorm_forward_kernel<false><<<warp_row_blocks(rows), kThreads, 0, stream>>>(
        rows, width, x, nullptr, nullptr, y, stats);
  }
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void layernorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* stats,
                        const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta,
                        StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if ((dgamma == nullptr) != (dbeta == nullptr) || (gamma == nullptr && dgamma != nullptr)) {
    throw std::invalid_argument(
        "layernorm_backward: dgamma and dbeta must both be given or both be null, and null without gamma");
  }
  if (rows == 0 || width == 0) return;
  if (gamma != nullptr) {
    layernorm_backward_dx_kernel<true><<<warp_row_blocks(rows), kThreads, 0, stream>>>(
        rows, width, x, stats, gamma, dy, dx);
  } else {
    layernorm_backward_dx_kernel<false><<<warp_row_blocks(rows), kThreads, 0, stream>>>(
        rows, width, x, stats, nullptr, dy, dx);
  }
  GPIPE_CUDA_CHECK(cudaGetLastError());
  if (dgamma == nullptr) return;  // no affine, or a frozen one
  column_sum2<<<column_blocks(width), dim3(kWarp, kReduceRows), 0, stream>>>(
      rows, width, ParamTerms{x, stats, dy, width}, dgamma, dbeta);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
