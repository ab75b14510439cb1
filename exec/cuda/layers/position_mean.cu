// lm_head's reductions over the positions of a sample (ops.hpp): the
// per-sample loss as the mean of its S per-position losses, summed in double
// in position order as exec/cpu/layers/lm_head.cpp does, and the per-position share
// g[n] / S of the loss gradient. S is a sequence length (small), so one
// thread per sample is enough.
#include <cuda_runtime.h>

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"
#include "exec/cuda/kernels/launch.hpp"
#include "exec/cuda/layers/ops.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

__global__ void position_mean_kernel(std::int64_t batch, std::int64_t seq, const float* in,
                                     float* out) {
  for (std::int64_t n = kernels::global_thread(); n < batch; n += kernels::grid_threads()) {
    double sum = 0.0;
    for (std::int64_t s = 0; s < seq; ++s) sum += in[n * seq + s];
    out[n] = static_cast<float>(__ddiv_rn(sum, static_cast<double>(seq)));
  }
}

__global__ void position_scale_kernel(std::int64_t batch, std::int64_t seq, const float* g,
                                      float* row_scale) {
  const std::int64_t count = batch * seq;
  for (std::int64_t i = kernels::global_thread(); i < count; i += kernels::grid_threads()) {
    row_scale[i] = __fdiv_rn(g[i / seq], static_cast<float>(seq));
  }
}

}  // namespace

void position_mean(std::int64_t batch, std::int64_t seq, const float* in, float* out,
                   RawStream stream) {
  kernels::check_size("batch", batch);
  kernels::check_size("seq", seq);
  if (batch == 0 || seq == 0) return;
  position_mean_kernel<<<kernels::elementwise_blocks(batch), kernels::kThreads, 0, stream>>>(
      batch, seq, in, out);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void position_scale(std::int64_t batch, std::int64_t seq, const float* g, float* row_scale,
                    RawStream stream) {
  kernels::check_size("batch", batch);
  kernels::check_size("seq", seq);
  if (batch == 0 || seq == 0) return;
  position_scale_kernel<<<kernels::elementwise_blocks(batch * seq), kernels::kThreads, 0,
                          stream>>>(batch, seq, g, row_scale);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::layers
