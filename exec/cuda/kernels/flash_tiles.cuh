// What the flash kernels (flash_attention_forward.cu, flash_attention_backward.cu)
// share: the shape as the kernels read it, the staging of rows and tiles into
// shared memory, a lane's dot product, the weighted sum of a tile's rows into
// a warp's registers, and the compile-time register count chosen from d.
// CUDA-only (included from .cu files).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/flash_attention.hpp"

namespace gpipe::exec::cuda::kernels::flash {

// The shape's derived numbers, formed once on the host.
struct Geometry {
  std::int64_t seq, heads, groups, group, d;
  std::int64_t width;   // qkv's row: (A+2G)d
  std::int64_t hidden;  // out's row: A d
  std::int64_t k_base, v_base;  // k's and v's first column in qkv's row
  std::int64_t row_blocks;      // ceil(S / kFlashRows): blocks per (sample, head)
  float scale;                  // 1 / sqrt(d), as the CPU forms it
  bool causal;
};

inline Geometry geometry(const AttentionShape& shape) {
  const std::int64_t d = shape.head_dim();
  return {shape.seq,
          shape.heads,
          shape.kv_groups(),
          shape.group_size(),
          d,
          shape.qkv_width(),
          shape.hidden,
          shape.heads * d,
          (shape.heads + shape.kv_groups()) * d,
          ceil_div(shape.seq, kFlashRows),
          1.0F / std::sqrt(static_cast<float>(d)),
          shape.causal};
}

// Rows [first, first + 32) of a matrix whose row r is d floats at src + r *
// src_stride, into tile [32][d+1]; rows from `seq` on become zeros. Every
// thread of the block takes part (the caller syncs before and after).
__device__ __forceinline__ void stage_tile(float* tile, const float* src, std::int64_t src_stride,
                                           std::int64_t first, std::int64_t seq, std::int64_t d) {
  for (std::int64_t idx = threadIdx.x; idx < kFlashTile * d; idx += blockDim.x) {
    const std::int64_t r = idx / d;
    const std::int64_t e = idx % d;
    const std::int64_t row = first + r;
    tile[r * (d + 1) + e] = row < seq ? src[row * src_stride + e] : 0.0F;
  }
}

// One warp copies a row of d floats.
__device__ __forceinline__ void stage_row(float* dst, const float* src, std::int64_t d, int lane) {
  for (std::int64_t e = lane; e < d; e += kWarp) dst[e] = src[e];
}

// sum_e a[e] b[e], in column order (one lane's score or dP entry).
__device__ __forceinline__ float dot(const float* a, const float* b, std::int64_t d) {
  float sum = 0.0F;
  for (std::int64_t e = 0; e < d; ++e) sum += a[e] * b[e];
  return sum;
}

// acc[c] += sum_j w_j tile[j][lane + 32c] over the tile's 32 rows, where w_j
// is lane j's w: the warp's row of P v (or dS k, P^T dout, dS^T q) for one tile.
template <int kChunks>
__device__ __forceinline__ void add_weighted_rows(float (&acc)[kChunks], float w, const float* tile,
                                                  std::int64_t d, int lane) {
  for (int j = 0; j < kFlashTile; ++j) {
    const float wj = __shfl_sync(0xFFFFFFFFU, w, j);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const std::int64_t e = lane + kWarp * c;
      if (e < d) acc[c] += wj * tile[j * (d + 1) + e];
    }
  }
}

// dst[e] = acc * factor for the lane's columns of a row of d.
template <int kChunks>
__device__ __forceinline__ void store_row(float* dst, const float (&acc)[kChunks], float factor,
                                          std::int64_t d, int lane) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const std::int64_t e = lane + kWarp * c;
    if (e < d) dst[e] = acc[c] * factor;
  }
}

// Calls f(std::integral_constant<int, k>) with k = flash_chunks(d): the
// kernels are compiled for 1, 2, 4 and 8 registers per lane.
template <class F>
void with_chunks(std::int64_t head_dim, F&& f) {
  switch (flash_chunks(head_dim)) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}

// Above 48 KiB a kernel must ask for its dynamic shared memory (Hopper allows 227 KiB).
template <class Kernel>
void allow_shared_bytes(Kernel* kernel, std::size_t bytes) {
  constexpr std::size_t kDefaultLimit = std::size_t{48} << 10;
  if (bytes <= kDefaultLimit) return;
  GPIPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

}  // namespace gpipe::exec::cuda::kernels::flash
