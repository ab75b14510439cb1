// Bias add, bias gradient and residual add (see bias.hpp).
#include "exec/cuda/kernels/bias.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/column_sum.cuh"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void bias_add_kernel(std::int64_t rows, std::int64_t width, const float* bias,
                                float* y) {
  const std::int64_t count = rows * width;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) y[i] += bias[i % width];
}

struct DyTerm {
  const float* dy;
  std::int64_t width;
  __device__ float2 operator()(std::int64_t r, std::int64_t j) const {
    return make_float2(dy[r * width + j], 0.0F);
  }
};

__global__ void residual_add_kernel(std::int64_t count, const float* a, const float* b,
                                    float* out) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) out[i] = a[i] + b[i];
}

}  // namespace

void bias_add(std::int64_t rows, std::int64_t width, const float* bias, float* y, StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if (rows == 0 || width == 0) return;
  bias_add_kernel<<<elementwise_blocks(rows * width), kThreads, 0, stream>>>(rows, width, bias, y);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void bias_backward(std::int64_t rows, std::int64_t width, const float* dy, float* dbias,
                   StreamHandle stream) {
  check_size("rows", rows);
  check_size("width", width);
  if (rows == 0 || width == 0) return;
  column_sum2<<<column_blocks(width), dim3(kWarp, kReduceRows), 0, stream>>>(
      rows, width, DyTerm{dy, width}, dbias, nullptr);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void residual_add(std::int64_t count, const float* a, const float* b, float* out, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  residual_add_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, a, b, out);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
