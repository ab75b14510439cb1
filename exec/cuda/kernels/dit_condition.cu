// DiT's timestep features and label rows (see dit_condition.hpp).
#include "exec/cuda/kernels/dit_condition.hpp"

#include <cmath>
#include <string>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void timestep_kernel(std::int64_t count, const float* t, std::int64_t t_stride,
                                std::int64_t half, double log_period, float* out) {
  const std::int64_t total = count * half;
  for (std::int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    const std::int64_t n = idx / half;
    const std::int64_t i = idx % half;
    const double freq = exp(-log_period * static_cast<double>(i) / static_cast<double>(half));
    const double arg = static_cast<double>(t[n * t_stride]) * freq;
    out[n * 2 * half + i] = static_cast<float>(cos(arg));
    out[n * 2 * half + half + i] = static_cast<float>(sin(arg));
  }
}

__device__ __forceinline__ std::int64_t label_of(const float* labels, const LabelRows& s,
                                                  std::int64_t n) {
  return static_cast<std::int64_t>(labels[n * s.label_stride]);
}

__global__ void label_rows_forward_kernel(LabelRows s, const float* labels, const float* table,
                                          const float* c, float* rows) {
  const std::int64_t count = s.batch * s.hidden;
  for (std::int64_t idx = global_thread(); idx < count; idx += grid_threads()) {
    const std::int64_t n = idx / s.hidden;
    const std::int64_t j = idx % s.hidden;
    rows[n * s.row_stride + j] = c[idx] + table[label_of(labels, s, n) * s.hidden + j];
  }
}

__global__ void label_rows_backward_kernel(LabelRows s, const float* labels, const float* drows,
                                           float* dtable) {
  for (std::int64_t j = global_thread(); j < s.hidden; j += grid_threads()) {
    for (std::int64_t n = 0; n < s.batch; ++n) {
      dtable[label_of(labels, s, n) * s.hidden + j] += drows[n * s.row_stride + j];
    }
  }
}

void check_label_rows(const LabelRows& s) {
  check_size("batch", s.batch);
  check_size("hidden", s.hidden);
  check_size("label_stride", s.label_stride);
  check_size("row_stride", s.row_stride);
}

}  // namespace

void timestep_embedding(std::int64_t count, const float* t, std::int64_t t_stride,
                        std::int64_t dim, double max_period, float* out, StreamHandle stream) {
  check_size("count", count);
  check_size("dim", dim);
  if (dim % 2 != 0) {
    throw std::invalid_argument("timestep_embedding: dim " + std::to_string(dim) + " is odd");
  }
  const std::int64_t half = dim / 2;
  if (count == 0 || half == 0) return;
  timestep_kernel<<<elementwise_blocks(count * half), kThreads, 0, stream>>>(
      count, t, t_stride, half, std::log(max_period), out);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void label_rows_forward(const LabelRows& shape, const float* labels, const float* table,
                        const float* c, float* rows, StreamHandle stream) {
  check_label_rows(shape);
  const std::int64_t count = shape.batch * shape.hidden;
  if (count == 0) return;
  label_rows_forward_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, labels,
                                                                                table, c, rows);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void label_rows_backward(const LabelRows& shape, const float* labels, const float* drows,
                         float* dtable, StreamHandle stream) {
  check_label_rows(shape);
  if (shape.batch == 0 || shape.hidden == 0) return;
  label_rows_backward_kernel<<<elementwise_blocks(shape.hidden), kThreads, 0, stream>>>(
      shape, labels, drows, dtable);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
