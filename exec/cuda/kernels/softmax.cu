// Attention's softmax forward and backward (see softmax.hpp), one warp per
// score row. Causal, row i sees its first i+1 entries; otherwise all S.
#include "exec/cuda/kernels/softmax.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void softmax_forward_kernel(std::int64_t rows, std::int64_t seq, bool causal,
                                       float* scores) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t seen = causal ? r % seq + 1 : seq;  // keys 0..seen-1 are visible
  float* row = scores + r * seq;
  float max = -INFINITY;
  for (std::int64_t j = lane; j < seen; j += 32) max = fmaxf(max, row[j]);
  max = warp_max(max);
  float sum = 0.0F;
  for (std::int64_t j = lane; j < seen; j += 32) {
    const float e = expf(row[j] - max);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0F / warp_sum(sum);
  for (std::int64_t j = lane; j < seq; j += 32) row[j] = j < seen ? row[j] * inv : 0.0F;
}

__global__ void softmax_backward_kernel(std::int64_t rows, std::int64_t seq, bool causal,
                                        const float* probs, float* dprobs) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t seen = causal ? r % seq + 1 : seq;
  const float* p = probs + r * seq;
  float* d = dprobs + r * seq;
  float dot = 0.0F;
  for (std::int64_t j = lane; j < seen; j += 32) dot += p[j] * d[j];
  dot = warp_sum(dot);
  for (std::int64_t j = lane; j < seq; j += 32) d[j] = p[j] * (d[j] - dot);
}

}  // namespace

void attention_softmax_forward(std::int64_t matrices, std::int64_t seq, bool causal, float* scores,
                               StreamHandle stream) {
  check_size("matrices", matrices);
  check_size("seq", seq);
  if (matrices == 0 || seq == 0) return;
  const std::int64_t rows = matrices * seq;
  softmax_forward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, seq, causal, scores);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void attention_softmax_backward(std::int64_t matrices, std::int64_t seq, bool causal,
                                const float* probs, float* dprobs, StreamHandle stream) {
  check_size("matrices", matrices);
  check_size("seq", seq);
  if (matrices == 0 || seq == 0) return;
  const std::int64_t rows = matrices * seq;
  softmax_backward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, seq, causal, probs,
                                                                          dprobs);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
