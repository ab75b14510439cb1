// Cross-entropy and mse kernels (see losses.hpp): one block per row, since a
// vocabulary row (tens of thousands of logits) is too long for one warp.
#include "exec/cuda/kernels/losses.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

constexpr int kWarps = kThreads / kWarp;

// Sum over the block, the same value returned to every thread.
template <typename T>
__device__ T block_sum(T v, T* shared) {
  v = warp_sum(v);
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < kWarps; ++w) total += shared[w];
  __syncthreads();  // shared is reused by the next reduction
  return total;
}

__device__ float block_max(float v, float* shared) {
  v = warp_max(v);
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = v;
  __syncthreads();
  float total = -INFINITY;
  for (int w = 0; w < kWarps; ++w) total = fmaxf(total, shared[w]);
  __syncthreads();
  return total;
}

__global__ void cross_entropy_forward_kernel(std::int64_t vocab, float* logits,
                                             const std::int32_t* targets, float* loss) {
  __shared__ float shared[kWarps];
  float* row = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;
  float max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) max = fmaxf(max, row[j]);
  max = block_max(max, shared);
  float sum = 0.0F;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) sum += expf(row[j] - max);
  sum = block_sum(sum, shared);  // its barriers order the read below before the writes
  if (threadIdx.x == 0) {
    loss[blockIdx.x] = logf(sum) + max - row[targets[blockIdx.x]];
  }
  __syncthreads();
  const float inv = 1.0F / sum;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) row[j] = expf(row[j] - max) * inv;
}

__global__ void cross_entropy_backward_kernel(std::int64_t rows, std::int64_t vocab,
                                              const float* probs, const std::int32_t* targets,
                                              const float* scale, float* dlogits) {
  const std::int64_t count = rows * vocab;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t r = i / vocab;
    // An explicit rounded multiply: contracted with the subtraction into one
    // FMA it would differ in the last bit from the CPU's (p s) - s.
    const float d = __fmul_rn(probs[i], scale[r]);
    dlogits[i] = (i % vocab == targets[r]) ? d - scale[r] : d;
  }
}

__global__ void mse_forward_kernel(std::int64_t width, const float* x, const float* target,
                                   float* loss) {
  __shared__ double shared[kWarps];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * width;
  double sum = 0.0;
  for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const double e = static_cast<double>(x[base + j]) - target[base + j];
    sum += e * e;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) loss[blockIdx.x] = static_cast<float>(sum / static_cast<double>(width));
}

__global__ void mse_backward_kernel(std::int64_t batch, std::int64_t width, const float* x,
                                    const float* target, const float* grad_loss, float* dx) {
  const std::int64_t count = batch * width;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const float scale = 2.0F * grad_loss[i / width] / static_cast<float>(width);
    dx[i] = scale * (x[i] - target[i]);
  }
}

}  // namespace

void cross_entropy_forward(std::int64_t rows, std::int64_t vocab, float* logits,
                           const std::int32_t* targets, float* loss, StreamHandle stream) {
  check_size("rows", rows);
  check_size("vocab", vocab);
  if (rows == 0 || vocab == 0) return;
  cross_entropy_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(vocab, logits,
                                                                                     targets, loss);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void cross_entropy_backward(std::int64_t rows, std::int64_t vocab, const float* probs,
                            const std::int32_t* targets, const float* scale, float* dlogits,
                            StreamHandle stream) {
  check_size("rows", rows);
  check_size("vocab", vocab);
  if (rows == 0 || vocab == 0) return;
  cross_entropy_backward_kernel<<<elementwise_blocks(rows * vocab), kThreads, 0, stream>>>(
      rows, vocab, probs, targets, scale, dlogits);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void mse_forward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                 float* loss, StreamHandle stream) {
  check_size("batch", batch);
  check_size("width", width);
  if (batch == 0 || width == 0) return;
  mse_forward_kernel<<<static_cast<unsigned>(batch), kThreads, 0, stream>>>(width, x, target, loss);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void mse_backward(std::int64_t batch, std::int64_t width, const float* x, const float* target,
                  const float* grad_loss, float* dx, StreamHandle stream) {
  check_size("batch", batch);
  check_size("width", width);
  if (batch == 0 || width == 0) return;
  mse_backward_kernel<<<elementwise_blocks(batch * width), kThreads, 0, stream>>>(
      batch, width, x, target, grad_loss, dx);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
