// The head permutes of naive attention (see heads.hpp); one thread per element.
#include "exec/cuda/kernels/heads.hpp"

#include "exec/cuda/base/check.hpp"
#include "exec/cuda/kernels/device_math.cuh"

namespace gpipe::exec::cuda::kernels {

namespace {

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

// The packed qkv row's geometry, as exec/cpu/ops/attention.cpp reads it.
struct QkvLayout {
  std::int64_t batch, seq, heads, head_dim, group, width, k_base, v_base;
};

QkvLayout qkv_layout(const cpu::AttentionShape& shape) {
  const std::int64_t d = shape.head_dim();
  return {shape.batch, shape.seq,          shape.heads,
          d,           shape.group_size(), shape.qkv_width(),
          shape.heads * d, (shape.heads + shape.kv_groups()) * d};
}

// i indexes the head-major [b, A, S, d]; each thread writes q, k and v.
__global__ void split_qkv_kernel(QkvLayout l, const float* qkv, float* q, float* k, float* v) {
  const std::int64_t count = l.batch * l.heads * l.seq * l.head_dim;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t e = i % l.head_dim;
    const std::int64_t s = (i / l.head_dim) % l.seq;
    const std::int64_t a = (i / (l.head_dim * l.seq)) % l.heads;
    const std::int64_t n = i / (l.head_dim * l.seq * l.heads);
    const float* row = qkv + (n * l.seq + s) * l.width;
    const std::int64_t kv = (a / l.group) * l.head_dim + e;
    q[i] = row[a * l.head_dim + e];
    k[i] = row[l.k_base + kv];
    v[i] = row[l.v_base + kv];
  }
}

// Sum over the group's query heads of the head-major gradient `heads` at
// (n, s, e), first head first: with one head, the value itself (no "0 +",
// which would turn -0 into +0).
__device__ __forceinline__ float group_sum(const QkvLayout& l, const float* heads, std::int64_t n,
                                           std::int64_t g, std::int64_t s, std::int64_t e) {
  const std::int64_t first = g * l.group;
  const std::int64_t stride = l.seq * l.head_dim;  // between consecutive heads
  const float* at = heads + ((n * l.heads + first) * l.seq + s) * l.head_dim + e;
  float sum = at[0];
  for (std::int64_t a = 1; a < l.group; ++a) sum += at[a * stride];
  return sum;
}

// i indexes the token-major dqkv [b, S, (A+2G)d].
__global__ void merge_qkv_kernel(QkvLayout l, const float* dq, const float* dk, const float* dv,
                                 float* dqkv) {
  const std::int64_t count = l.batch * l.seq * l.width;
  for (std::int64_t i = global_thread(); i < count; i += grid_threads()) {
    const std::int64_t col = i % l.width;
    const std::int64_t s = (i / l.width) % l.seq;
    const std::int64_t n = i / (l.width * l.seq);
    if (col < l.k_base) {
      const std::int64_t a = col / l.head_dim;
      dqkv[i] = dq[((n * l.heads + a) * l.seq + s) * l.head_dim + col % l.head_dim];
    } else if (col < l.v_base) {
      const std::int64_t c = col - l.k_base;
      dqkv[i] = group_sum(l, dk, n, c / l.head_dim, s, c % l.head_dim);
    } else {
      const std::int64_t c = col - l.v_base;
      dqkv[i] = group_sum(l, dv, n, c / l.head_dim, s, c % l.head_dim);
    }
  }
}

}  // namespace

void split_heads(const HeadLayout& layout, const float* rows, float* heads, StreamHandle stream) {
  permute(layout, rows, heads, true, stream);
}

void merge_heads(const HeadLayout& layout, const float* heads, float* rows, StreamHandle stream) {
  permute(layout, heads, rows, false, stream);
}

void split_qkv(const cpu::AttentionShape& shape, const float* qkv, float* q, float* k, float* v,
               StreamHandle stream) {
  const QkvLayout l = qkv_layout(shape);
  const std::int64_t count = l.batch * l.heads * l.seq * l.head_dim;
  if (count == 0) return;
  split_qkv_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(l, qkv, q, k, v);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

void merge_qkv_gradients(const cpu::AttentionShape& shape, const float* dq, const float* dk,
                         const float* dv, float* dqkv, StreamHandle stream) {
  const QkvLayout l = qkv_layout(shape);
  const std::int64_t count = l.batch * l.seq * l.width;
  if (count == 0) return;
  merge_qkv_kernel<<<elementwise_blocks(count), kThreads, 0, stream>>>(l, dq, dk, dv, dqkv);
  GPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpipe::exec::cuda::kernels
