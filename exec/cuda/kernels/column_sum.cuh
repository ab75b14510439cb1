// Deterministic column sums over [rows, width] for the parameter gradients
// (bias, LayerNorm gamma and beta): blocks of 32 columns x kReduceRows row
// lanes, each lane summing a strided set of rows, then a fixed-order combine
// in shared memory and one add into the output (so gradients accumulate).
// CUDA-only (included from .cu files).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// out_a[j] += sum_r term(r, j).x, out_b[j] += sum_r term(r, j).y (out_b may be null
// when the term's .y is unused).
template <typename Term>
__global__ void column_sum2(std::int64_t rows, std::int64_t width, Term term, float* out_a,
                            float* out_b) {
  __shared__ float part_a[kReduceRows][kWarp];
  __shared__ float part_b[kReduceRows][kWarp];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kWarp + threadIdx.x;
  float a = 0.0F;
  float b = 0.0F;
  if (j < width) {
    for (std::int64_t r = threadIdx.y; r < rows; r += kReduceRows) {
      const float2 t = term(r, j);
      a += t.x;
      b += t.y;
    }
  }
  part_a[threadIdx.y][threadIdx.x] = a;
  part_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && j < width) {
    for (int y = 1; y < kReduceRows; ++y) {
      a += part_a[y][threadIdx.x];
      b += part_b[y][threadIdx.x];
    }
    out_a[j] += a;
    if (out_b != nullptr) out_b[j] += b;
  }
}

}  // namespace gpipe::exec::cuda::kernels
