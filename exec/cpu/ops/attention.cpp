#include "exec/cpu/ops/attention.hpp"

#include <algorithm>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/vector_math.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

namespace {

// Row i of scores[S,S] becomes the softmax of its first i+1 entries; the
// masked entries become exactly 0, so the backward needs no mask of its own.
GPIPE_VECTOR_CLONES void causal_softmax(std::int64_t seq, float* scores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    float* row = scores + i * seq;
    const float max = max_of(i + 1, row);
    const float inv = 1.0F / exp_shifted_sum(i + 1, row, max);
#pragma omp simd
    for (std::int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + seq, 0.0F);
  }
}

// Softmax's backward, row by row: dS = P * (dP - sum_j P dP), in place of dP.
// The masked P are 0, so the masked dS are too.
GPIPE_VECTOR_CLONES void causal_softmax_backward(std::int64_t seq, const float* probs,
                                                 float* dscores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    const float* pr = probs + i * seq;
    float* dr = dscores + i * seq;
    float dot = 0.0F;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j <= i; ++j) dot += pr[j] * dr[j];
#pragma omp simd
    for (std::int64_t j = 0; j < seq; ++j) dr[j] = pr[j] * (dr[j] - dot);
  }
}

}  // namespace

void attention_forward(const AttentionShape& shape, const float* qkv, float* probs, float* out) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  const std::int64_t pairs = shape.batch * shape.heads;
  // (sample, head) pairs are independent: split over the rank's team.
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.heads;
      const std::int64_t a = pair % shape.heads;
      const float* sample = qkv + n * s * 3 * h;
      const float* q = sample + a * d;
      const float* k = sample + h + a * d;
      const float* v = sample + 2 * h + a * d;
      float* p = probs + pair * s * s;
      // The full S x S product, as the FLOP model counts it; the mask is applied after.
      gemm(Transpose::no, Transpose::yes, s, s, d, scale, q, 3 * h, k, 3 * h, 0.0F, p, s);
      causal_softmax(s, p);
      gemm(Transpose::no, Transpose::no, s, d, s, 1.0F, p, s, v, 3 * h, 0.0F,
           out + n * s * h + a * d, h);
    }
  });
}

void attention_backward(const AttentionShape& shape, const float* qkv, const float* probs,
                        const float* dout, float* dqkv) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  const std::int64_t pairs = shape.batch * shape.heads;
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    // Reused by this part's heads; from the tensor pool, so a step allocates nothing.
    Tensor dscores = Tensor::uninitialized({s, s});
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.heads;
      const std::int64_t a = pair % shape.heads;
      const float* sample = qkv + n * s * 3 * h;
      float* dsample = dqkv + n * s * 3 * h;
      const float* q = sample + a * d;
      const float* k = sample + h + a * d;
      const float* v = sample + 2 * h + a * d;
      const float* p = probs + pair * s * s;
      const float* dout_head = dout + n * s * h + a * d;
      float* ds = dscores.data();
      // dP = dout v^T, dv = P^T dout.
      gemm(Transpose::no, Transpose::yes, s, s, d, 1.0F, dout_head, h, v, 3 * h, 0.0F, ds, s);
      gemm(Transpose::yes, Transpose::no, s, d, s, 1.0F, p, s, dout_head, h, 0.0F,
           dsample + 2 * h + a * d, 3 * h);
      causal_softmax_backward(s, p, ds);
      // dq = scale dS k, dk = scale dS^T q.
      gemm(Transpose::no, Transpose::no, s, d, s, scale, ds, s, k, 3 * h, 0.0F, dsample + a * d,
           3 * h);
      gemm(Transpose::yes, Transpose::no, s, d, s, scale, ds, s, q, 3 * h, 0.0F,
           dsample + h + a * d, 3 * h);
    }
  });
}

}  // namespace gpipe::exec::cpu
