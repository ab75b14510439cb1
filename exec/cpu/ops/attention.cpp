#include "exec/cpu/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/cpu/ops/gemm.hpp"

namespace gpipe::exec::cpu {

namespace {

// Row i of scores[S,S] becomes the softmax of its first i+1 entries; the
// masked entries become exactly 0, so the backward needs no mask of its own.
void causal_softmax(std::int64_t seq, float* scores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    float* row = scores + i * seq;
    const float max = *std::max_element(row, row + i + 1);
    float sum = 0.0F;
    for (std::int64_t j = 0; j <= i; ++j) {
      row[j] = std::exp(row[j] - max);
      sum += row[j];
    }
    const float inv = 1.0F / sum;
    for (std::int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + seq, 0.0F);
  }
}

}  // namespace

void attention_forward(const AttentionShape& shape, const float* qkv, float* probs, float* out) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    const float* sample = qkv + n * s * 3 * h;
    for (std::int64_t a = 0; a < shape.heads; ++a) {
      const float* q = sample + a * d;
      const float* k = sample + h + a * d;
      const float* v = sample + 2 * h + a * d;
      float* p = probs + (n * shape.heads + a) * s * s;
      // The full S x S product, as the FLOP model counts it; the mask is applied after.
      gemm(Transpose::no, Transpose::yes, s, s, d, scale, q, 3 * h, k, 3 * h, 0.0F, p, s);
      causal_softmax(s, p);
      gemm(Transpose::no, Transpose::no, s, d, s, 1.0F, p, s, v, 3 * h, 0.0F,
           out + n * s * h + a * d, h);
    }
  }
}

void attention_backward(const AttentionShape& shape, const float* qkv, const float* probs,
                        const float* dout, float* dqkv) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  std::vector<float> dscores(static_cast<std::size_t>(s * s));  // reused by every head
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    const float* sample = qkv + n * s * 3 * h;
    float* dsample = dqkv + n * s * 3 * h;
    const float* dout_sample = dout + n * s * h;
    for (std::int64_t a = 0; a < shape.heads; ++a) {
      const float* q = sample + a * d;
      const float* k = sample + h + a * d;
      const float* v = sample + 2 * h + a * d;
      const float* p = probs + (n * shape.heads + a) * s * s;
      const float* dout_head = dout_sample + a * d;
      float* ds = dscores.data();
      // dP = dout v^T, dv = P^T dout.
      gemm(Transpose::no, Transpose::yes, s, s, d, 1.0F, dout_head, h, v, 3 * h, 0.0F, ds, s);
      gemm(Transpose::yes, Transpose::no, s, d, s, 1.0F, p, s, dout_head, h, 0.0F,
           dsample + 2 * h + a * d, 3 * h);
      // Softmax backward, row by row: dS = P * (dP - sum_j P dP). Masked P are 0.
      for (std::int64_t i = 0; i < s; ++i) {
        const float* pr = p + i * s;
        float* dr = ds + i * s;
        float dot = 0.0F;
        for (std::int64_t j = 0; j <= i; ++j) dot += pr[j] * dr[j];
        for (std::int64_t j = 0; j < s; ++j) dr[j] = pr[j] * (dr[j] - dot);
      }
      // dq = scale dS k, dk = scale dS^T q.
      gemm(Transpose::no, Transpose::no, s, d, s, scale, ds, s, k, 3 * h, 0.0F, dsample + a * d,
           3 * h);
      gemm(Transpose::yes, Transpose::no, s, d, s, scale, ds, s, q, 3 * h, 0.0F,
           dsample + h + a * d, 3 * h);
    }
  }
}

}  // namespace gpipe::exec::cpu
