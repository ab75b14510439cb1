// Optimizer step kernels (see optimizer.hpp). Every operation is an explicit
// round-to-nearest intrinsic: nvcc would otherwise contract a*b+c into one
// fused multiply-add, which the CPU's optimizer does not (exec/CMakeLists.txt
// builds it with -ffp-contract=off), and the results would differ in the last
// bit from exec/cpu/optimizer.cpp.
#include "exec/cuda/kernels/optimizer.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void sgd_kernel(std::int64_t count, float lr, float* w, float* g) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    w[i] = __fsub_rn(w[i], __fmul_rn(lr, g[i]));
    g[i] = 0.0F;
  }
}

__global__ void momentum_kernel(std::int64_t count, float lr, float mu, float* w, float* g,
                                float* v) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float vi = __fadd_rn(__fmul_rn(mu, v[i]), g[i]);
    v[i] = vi;
    w[i] = __fsub_rn(w[i], __fmul_rn(lr, vi));
    g[i] = 0.0F;
  }
}

__global__ void adamw_kernel(std::int64_t count, AdamwScalars s, float* w, float* g, float* m,
                             float* v) {
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float gi = g[i];
    const float wi = __fmul_rn(w[i], s.decay);
    const float mi = __fadd_rn(__fmul_rn(s.beta1, m[i]), __fmul_rn(s.one_minus_beta1, gi));
    const float vi =
        __fadd_rn(__fmul_rn(s.beta2, v[i]), __fmul_rn(__fmul_rn(s.one_minus_beta2, gi), gi));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), s.sqrt_correction2), s.epsilon);
    w[i] = __fsub_rn(wi, __fdiv_rn(__fmul_rn(s.step_size, mi), denom));
    m[i] = mi;
    v[i] = vi;
    g[i] = 0.0F;
  }
}

}  // namespace

void sgd_step(std::int64_t count, float learning_rate, float* w, float* g, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  sgd_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, learning_rate, w, g);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void momentum_step(std::int64_t count, float learning_rate, float momentum, float* w, float* g,
                   float* v, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  momentum_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, learning_rate,
                                                                      momentum, w, g, v);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void adamw_step(std::int64_t count, const AdamwScalars& scalars, float* w, float* g, float* m,
                float* v, StreamHandle stream) {
  check_size("count", count);
  if (count == 0) return;
  adamw_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(count, scalars, w, g, m, v);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
