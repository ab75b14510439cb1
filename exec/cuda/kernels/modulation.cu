// adaLN modulation and gated residual, forward and backward (see
// modulation.hpp). The forwards are elementwise; each backward is one
// column_sum2 per sample (sample n's tokens are a [tokens, hidden] block, its
// sums go to its own strided vector), then the elementwise gradient.
#include "exec/cuda/kernels/modulation.hpp"

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/column_sum.cuh"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

// Element i of [batch, tokens, hidden]: its sample's vector entry is at n * mod_stride + j.
__device__ __forceinline__ std::int64_t vector_at(const ModulationShape& s, std::int64_t i) {
  return (i / (s.tokens * s.hidden)) * s.mod_stride + i % s.hidden;
}

__global__ void modulate_forward_kernel(ModulationShape s, const float* xhat, const float* shift,
                                        const float* scale, float* y) {
  const std::int64_t count = s.batch * s.tokens * s.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t v = vector_at(s, i);
    y[i] = xhat[i] * (1.0F + scale[v]) + shift[v];
  }
}

__global__ void modulate_dxhat_kernel(ModulationShape s, const float* scale, const float* dy,
                                      float* dxhat) {
  const std::int64_t count = s.batch * s.tokens * s.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    dxhat[i] = dy[i] * (1.0F + scale[vector_at(s, i)]);
  }
}

__global__ void gated_residual_forward_kernel(ModulationShape s, const float* x, const float* gate,
                                              const float* f, float* y) {
  const std::int64_t count = s.batch * s.tokens * s.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    y[i] = x[i] + gate[vector_at(s, i)] * f[i];
  }
}

__global__ void gated_residual_df_kernel(ModulationShape s, const float* gate, const float* dy,
                                         float* df) {
  const std::int64_t count = s.batch * s.tokens * s.hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    df[i] = dy[i] * gate[vector_at(s, i)];
  }
}

// (dy, dy * other) for token r, column j of one sample's block.
struct ProductTerms {
  const float* dy;
  const float* other;
  std::int64_t hidden;
  __device__ float2 operator()(std::int64_t r, std::int64_t j) const {
    const float d = dy[r * hidden + j];
    return make_float2(d, d * other[r * hidden + j]);
  }
};

// (dy * other) alone: the gate's sum.
struct ProductTerm {
  const float* dy;
  const float* other;
  std::int64_t hidden;
  __device__ float2 operator()(std::int64_t r, std::int64_t j) const {
    return make_float2(dy[r * hidden + j] * other[r * hidden + j], 0.0F);
  }
};

std::int64_t checked_count(const ModulationShape& s) {
  check_size("batch", s.batch);
  check_size("tokens", s.tokens);
  check_size("hidden", s.hidden);
  check_size("mod_stride", s.mod_stride);
  return s.batch * s.tokens * s.hidden;
}

}  // namespace

void modulate_forward(const ModulationShape& shape, const float* xhat, const float* shift,
                      const float* scale, float* y, StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  modulate_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, xhat, shift,
                                                                              scale, y);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void modulate_backward(const ModulationShape& shape, const float* xhat, const float* scale,
                       const float* dy, float* dxhat, float* dshift, float* dscale,
                       StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  const std::int64_t block = shape.tokens * shape.hidden;
  // The sums first: dxhat may overwrite dy or x_hat.
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    column_sum2<<<column_blocks(shape.hidden), dim3(kWarp, kReduceRows), 0, stream>>>(
        shape.tokens, shape.hidden, ProductTerms{dy + n * block, xhat + n * block, shape.hidden},
        dshift + n * shape.mod_stride, dscale + n * shape.mod_stride);
    GPIPE_CUDA_CHECK(cudaGetLastError());
  }
  modulate_dxhat_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, scale, dy,
                                                                            dxhat);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void gated_residual_forward(const ModulationShape& shape, const float* x, const float* gate,
                            const float* f, float* y, StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  gated_residual_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, x, gate,
                                                                                    f, y);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void gated_residual_backward(const ModulationShape& shape, const float* f, const float* gate,
                             const float* dy, float* df, float* dgate, StreamHandle stream) {
  const std::int64_t count = checked_count(shape);
  if (count == 0) return;
  const std::int64_t block = shape.tokens * shape.hidden;
  // The sums first: df may overwrite dy or f.
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    column_sum2<<<column_blocks(shape.hidden), dim3(kWarp, kReduceRows), 0, stream>>>(
        shape.tokens, shape.hidden, ProductTerm{dy + n * block, f + n * block, shape.hidden},
        dgate + n * shape.mod_stride, nullptr);
    GPIPE_CUDA_CHECK(cudaGetLastError());
  }
  gated_residual_df_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, gate, dy, df);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
