// GELU forward and backward (see gelu.hpp), elementwise with a grid stride.
#include "exec/cuda/kernels/gelu.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654F;  // sqrt(2/pi), as exec/cpu/ops/gelu.cpp
constexpr float kCubic = 0.044715F;

__global__ void gelu_forward_kernel(std::int64_t count, const float* x, float* y) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float v = x[i];
    const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    y[i] = 0.5F * v * (1.0F + t);
  }
}

__global__ void gelu_backward_kernel(std::int64_t count, const float* x, const float* dy,
                                     float* dx) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float v = x[i];
    const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float du = kSqrt2OverPi * (1.0F + 3.0F * kCubic * v * v);
    dx[i] = dy[i] * (0.5F * (1.0F + t) + 0.5F * v * (1.0F - t * t) * du);
  }
}

}  // namespace

void gelu_forward(std::int64_t count, const float* x, float* y, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  gelu_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, x, y);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  gelu_backward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, x, dy, dx);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
