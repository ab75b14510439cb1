// SiLU and SwiGLU forward and backward (see swiglu.hpp), elementwise with a grid stride.
#include "exec/cuda/kernels/swiglu.hpp"

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

// 1 / (1 + e^-v) from e = e^-|v|, 0 below -87 and for NaN (the caller
// multiplies by v, which brings a NaN back): exec/cpu/ops/swiglu.cpp's sigmoid_tail0.
__device__ __forceinline__ float sigmoid_tail0(float v) {
  const float e = expf(-fabsf(v));
  const float s = (v >= 0.0F ? 1.0F : e) / (1.0F + e);
  return v >= -87.0F ? s : 0.0F;
}

// silu'(v) = s (1 + v (1 - s)), s = sigmoid(v).
__device__ __forceinline__ float silu_grad(float v, float s) { return s * (1.0F + v * (1.0F - s)); }

__global__ void swiglu_forward_kernel(std::int64_t count, const float* gate, const float* up,
                                      float* h) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float g = gate[i];
    h[i] = g * sigmoid_tail0(g) * up[i];
  }
}

__global__ void swiglu_backward_kernel(std::int64_t count, const float* gate, const float* up,
                                       const float* dh, float* dgate, float* dup) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    // All three inputs are read before either output is written: the aliasing the header allows.
    const float g = gate[i];
    const float u = up[i];
    const float d = dh[i];
    const float s = sigmoid_tail0(g);
    dgate[i] = d * u * silu_grad(g, s);
    dup[i] = d * (g * s);
  }
}

__global__ void silu_forward_kernel(std::int64_t count, const float* x, float* y) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float v = x[i];
    y[i] = v * sigmoid_tail0(v);
  }
}

__global__ void silu_backward_kernel(std::int64_t count, const float* x, const float* dy,
                                     float* dx) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float v = x[i];
    dx[i] = dy[i] * silu_grad(v, sigmoid_tail0(v));
  }
}

}  // namespace

void swiglu_forward(std::int64_t count, const float* gate, const float* up, float* h,
                    StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  swiglu_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, gate, up, h);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void swiglu_backward(std::int64_t count, const float* gate, const float* up, const float* dh,
                     float* dgate, float* dup, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  swiglu_backward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, gate, up, dh,
                                                                             dgate, dup);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void silu_forward(std::int64_t count, const float* x, float* y, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  silu_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, x, y);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void silu_backward(std::int64_t count, const float* x, const float* dy, float* dx,
                   StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  silu_backward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, x, dy, dx);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
