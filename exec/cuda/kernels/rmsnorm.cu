// RMSNorm forward and backward (see rmsnorm.hpp): one warp per row for rstd and
// dx, as layernorm.cu, and dgamma as a separate column reduction (no atomics).
#include "exec/cuda/kernels/rmsnorm.hpp"

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/column_sum.cuh"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

constexpr float kEps = 1e-5F;  // exec/cpu/ops/rmsnorm.hpp's kRmsNormEps

__global__ void rmsnorm_forward_kernel(std::int64_t rows, std::int64_t width, const float* x,
                                       const float* gamma, float* y, float* rstd) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* xr = x + r * width;
  float squares = 0.0F;
  for (std::int64_t j = lane; j < width; j += 32) squares += xr[j] * xr[j];
  // As the CPU: the sum times 1/width, and a true division (not rsqrtf's approximation).
  const float inv_width = 1.0F / static_cast<float>(width);
  const float s = 1.0F / sqrtf(warp_sum(squares) * inv_width + kEps);
  float* yr = y + r * width;
  // (x * rstd) * gamma, in Llama's order: normalise, then scale.
  for (std::int64_t j = lane; j < width; j += 32) yr[j] = xr[j] * s * gamma[j];
  if (lane == 0) rstd[r] = s;
}

__global__ void rmsnorm_backward_dx_kernel(std::int64_t rows, std::int64_t width, const float* x,
                                           const float* rstd, const float* gamma,
                                           const float* dy, float* dx) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* xr = x + r * width;
  const float* dyr = dy + r * width;
  const float s = rstd[r];
  // rstd depends on every x of the row, so
  // dx = rstd * (g - x_hat * mean(g * x_hat)), g = dy * gamma, x_hat = x * rstd.
  float sum_g_xhat = 0.0F;
  for (std::int64_t j = lane; j < width; j += 32) sum_g_xhat += dyr[j] * gamma[j] * (xr[j] * s);
  const float mean_g_xhat = warp_sum(sum_g_xhat) * (1.0F / static_cast<float>(width));
  float* dxr = dx + r * width;
  for (std::int64_t j = lane; j < width; j += 32) {
    const float xhat = xr[j] * s;
    dxr[j] += s * (dyr[j] * gamma[j] - xhat * mean_g_xhat);
  }
}

// dgamma's term for element (r, j): dy * x_hat.
struct GammaTerm {
  const float* x;
  const float* rstd;
  const float* dy;
  std::int64_t width;
  __device__ float2 operator()(std::int64_t r, std::int64_t j) const {
    return make_float2(dy[r * width + j] * (x[r * width + j] * rstd[r]), 0.0F);
  }
};

}  // namespace

void rmsnorm_forward(std::int64_t rows, std::int64_t width, const float* x, const float* gamma,
                     float* y, float* rstd, StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if (rows == 0 || width == 0) return;
  rmsnorm_forward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, width, x, gamma, y,
                                                                         rstd);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void rmsnorm_backward(std::int64_t rows, std::int64_t width, const float* x, const float* rstd,
                      const float* gamma, const float* dy, float* dx, float* dgamma,
                      StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if (rows == 0 || width == 0) return;
  rmsnorm_backward_dx_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, width, x, rstd,
                                                                             gamma, dy, dx);
  GPIPE_CUDA_CHECK(cudaGetLastError());
  column_sum2<<<column_blocks(width), dim3(kWarp, kReduceRows), 0, stream>>>(
      rows, width, GammaTerm{x, rstd, dy, width}, dgamma, nullptr);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
