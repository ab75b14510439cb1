// Rotary embedding forward and backward (see rope.hpp).
#include "exec/cuda/kernels/rope.hpp"

#include <string>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

// `direction` +1 rotates by +angle, -1 by -angle (sin negated), as the CPU's rotate_tokens.
__global__ void rope_kernel(RopeShape shape, float direction, float* x) {
  const std::int64_t half = shape.head_dim / 2;
  const std::int64_t count = shape.batch * shape.seq * half;
  for (std::int64_t idx = global_thread(); idx < count; idx += grid_threads()) {
    const std::int64_t token = idx / half;
    const std::int64_t i = idx % half;
    const std::int64_t pos = token % shape.seq;
    // exec/cpu/ops/rope.cpp's table entry (pos, i), in double, rounded once.
    const double inv_freq = pow(shape.theta, -2.0 * static_cast<double>(i) /
                                                 static_cast<double>(shape.head_dim));
    const double angle = static_cast<double>(pos) * inv_freq;
    const float c = static_cast<float>(cos(angle));
    const float sn = direction * static_cast<float>(sin(angle));
    float* row = x + token * shape.row_stride + 2 * i;
    for (std::int64_t h = 0; h < shape.heads; ++h) {
      float* pair = row + h * shape.head_dim;
      const float a = pair[0];
      const float b = pair[1];
      pair[0] = a * c - b * sn;
      pair[1] = a * sn + b * c;
    }
  }
}

void rope_apply(const RopeShape& shape, float direction, float* x, StreamHandle stream) {
  check_rope_shape(shape);
  const std::int64_t count = rope_threads(shape);
  if (count == 0 || shape.heads == 0) return;
  rope_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(shape, direction, x);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void check_rope_shape(const RopeShape& shape) {
  check_size("batch", shape.batch);
  check_size("seq", shape.seq);
  check_size("heads", shape.heads);
  check_size("head_dim", shape.head_dim);
  if (shape.head_dim % 2 != 0 || shape.row_stride < shape.heads * shape.head_dim) {
    throw std::invalid_argument("rope: head_dim " + std::to_string(shape.head_dim) +
                                " must be even and the row stride " +
                                std::to_string(shape.row_stride) + " must hold " +
                                std::to_string(shape.heads) + " heads of it");
  }
}

void rope_forward(const RopeShape& shape, float* x, StreamHandle stream) {
  rope_apply(shape, 1.0F, x, stream);
}

void rope_backward(const RopeShape& shape, float* dx, StreamHandle stream) {
  rope_apply(shape, -1.0F, dx, stream);
}

}  // namespace gpipe::exec::cuda::kernels
