// Causal softmax forward/backward and the head permutes (see softmax.hpp).
// One warp per score row, as llm.c's attention softmax.
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"
#include "exec/cuda/kernels/softmax.hpp"

namespace gpipe::exec::cuda::kernels {

namespace {

__global__ void causal_softmax_forward_kernel(std::int64_t rows, std::int64_t seq, float* scores) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t i = r % seq;  // query position: keys 0..i are visible
  float* row = scores + r * seq;
  float max = -INFINITY;
  for (std::int64_t j = lane; j <= i; j += 32) max = fmaxf(max, row[j]);
  max = warp_max(max);
  float sum = 0.0F;
  for (std::int64_t j = lane; j <= i; j += 32) {
    const float e = expf(row[j] - max);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0F / warp_sum(sum);
  for (std::int64_t j = lane; j < seq; j += 32) row[j] = j <= i ? row[j] * inv : 0.0F;
}

__global__ void causal_softmax_backward_kernel(std::int64_t rows, std::int64_t seq,
                                               const float* probs, float* dprobs) {
  const std::int64_t r = warp_row();
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t i = r % seq;
  const float* p = probs + r * seq;
  float* d = dprobs + r * seq;
  float dot = 0.0F;
  for (std::int64_t j = lane; j <= i; j += 32) dot += p[j] * d[j];
  dot = warp_sum(dot);
  for (std::int64_t j = lane; j < seq; j += 32) d[j] = p[j] * (d[j] - dot);
}

// Index of element (part, n, a, s, e) in each layout; one thread per element.
__global__ void permute_heads_kernel(HeadLayout l, const float* src, float* dst, bool to_heads) {
  const std::int64_t hidden = l.heads * l.head_dim;
  const std::int64_t count = l.parts * l.batch * l.seq * hidden;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    // i indexes the token-major layout [b, S, parts, A, d].
    const std::int64_t e = i % l.head_dim;
    const std::int64_t a = (i / l.head_dim) % l.heads;
    const std::int64_t part = (i / hidden) % l.parts;
    const std::int64_t s = (i / (hidden * l.parts)) % l.seq;
    const std::int64_t n = i / (hidden * l.parts * l.seq);
    const std::int64_t h = (((part * l.batch + n) * l.heads + a) * l.seq + s) * l.head_dim + e;
    if (to_heads) {
      dst[h] = src[i];
    } else {
      dst[i] = src[h];
    }
  }
}

void permute(const HeadLayout& layout, const float* src, float* dst, bool to_heads, StreamHandle stream) {
  check_size("batch", layout.batch);
  check_size("seq", layout.seq);
  check_size("heads", layout.heads);
  check_size("head_dim", layout.head_dim);
  check_size("parts", layout.parts);
  const std::int64_t count =
      layout.parts * layout.batch * layout.seq * layout.heads * layout.head_dim;
  if (count == 0) return;
  permute_heads_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(layout, src, dst,
                                                                           to_heads);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void causal_softmax_forward(std::int64_t matrices, std::int64_t seq, float* scores, StreamHandle stream) {
  check_size("matrices", matrices);
  check_size("seq", seq);
  if (matrices == 0 || seq == 0) return;
  const std::int64_t rows = matrices * seq;
  causal_softmax_forward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, seq, scores);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void causal_softmax_backward(std::int64_t matrices, std::int64_t seq, const float* probs,
                             float* dprobs, StreamHandle stream) {
  check_size("matrices", matrices);
  check_size("seq", seq);
  if (matrices == 0 || seq == 0) return;
  const std::int64_t rows = matrices * seq;
  causal_softmax_backward_kernel<<<warp_row_blocks(rows), kThreads, 0, stream>>>(rows, seq, probs,
                                                                                 dprobs);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void split_heads(const HeadLayout& layout, const float* rows, float* heads, StreamHandle stream) {
  permute(layout, rows, heads, true, stream);
}

void merge_heads(const HeadLayout& layout, const float* heads, float* rows, StreamHandle stream) {
  permute(layout, heads, rows, false, stream);
}

}  // namespace gpipe::exec::cuda::kernels
