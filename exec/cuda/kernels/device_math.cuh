// Device helpers shared by the kernels of this folder: warp reductions and the
// grid-stride loop bound. CUDA-only (included from .cu files).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpipe::exec::cuda::kernels {

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFU, v, offset);
  return v;
}

__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFU, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFU, v, offset));
  return v;
}

__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ std::int64_t grid_threads() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// The row a warp owns in the one-warp-per-row kernels.
__device__ __forceinline__ std::int64_t warp_row() {
  return static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
}

}  // namespace gpipe::exec::cuda::kernels
