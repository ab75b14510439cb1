#include "exec/cpu/ops/attention.hpp"

#include <algorithm>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/vector_math.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

namespace {

// The causal mask leaves the upper triangle of every S x S product zero, so
// the products run in bands of kBand query rows, each only as far as its last
// row sees: 62.5 % of the full products' FLOPs at S = 128 (bands of 32), with
// GEMMs still large enough to run near OpenBLAS's speed.
constexpr std::int64_t kBand = 32;

// Calls band(first_row, end_row) for the bands of [0, seq).
template <class F>
void for_bands(std::int64_t seq, F&& band) {
  for (std::int64_t i0 = 0; i0 < seq; i0 += kBand) band(i0, std::min(seq, i0 + kBand));
}

// Row i of scores[S,S] becomes the softmax of its first i+1 entries (the rest
// need not have been computed); the masked entries become exactly 0.
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

// Softmax's backward, row by row: dS = P * (dP - sum_j P dP), in place of dP,
// over each row's first i+1 entries; the masked dS are set to exactly 0 (dP
// there was never computed).
GPIPE_VECTOR_CLONES void causal_softmax_backward(std::int64_t seq, const float* probs,
                                                 float* dscores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    const float* pr = probs + i * seq;
    float* dr = dscores + i * seq;
    float dot = 0.0F;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j <= i; ++j) dot += pr[j] * dr[j];
#pragma omp simd
    for (std::int64_t j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - dot);
    std::fill(dr + i + 1, dr + seq, 0.0F);
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
      float* o = out + n * s * h + a * d;
      // S[i0:i1, 0:i1] = scale q[i0:i1] k[0:i1]^T, band by band; then the mask and softmax.
      for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
        gemm(Transpose::no, Transpose::yes, i1 - i0, i1, d, scale, q + i0 * 3 * h, 3 * h, k, 3 * h, 0.0F,
             p + i0 * s, s);
      });
      causal_softmax(s, p);
      // out[i0:i1] = P[i0:i1, 0:i1] v[0:i1].
      for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
        gemm(Transpose::no, Transpose::no, i1 - i0, d, i1, 1.0F, p + i0 * s, s, v, 3 * h, 0.0F, o + i0 * h, h);
      });
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
      float* dq = dsample + a * d;
      float* dk = dsample + h + a * d;
      float* dv = dsample + 2 * h + a * d;
      float* ds = dscores.data();
      // dP[i0:i1, 0:i1] = dout[i0:i1] v[0:i1]^T; then dS over the same entries, 0 above.
      for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
        gemm(Transpose::no, Transpose::yes, i1 - i0, i1, d, 1.0F, dout_head + i0 * h, h, v, 3 * h, 0.0F,
             ds + i0 * s, s);
      });
      causal_softmax_backward(s, p, ds);
      for_bands(s, [&](std::int64_t j0, std::int64_t j1) {
        // Key rows j0:j1 are seen by query rows j0 and after: dv = P^T dout, dk = scale dS^T q.
        gemm(Transpose::yes, Transpose::no, j1 - j0, d, s - j0, 1.0F, p + j0 * s + j0, s, dout_head + j0 * h, h,
             0.0F, dv + j0 * 3 * h, 3 * h);
        gemm(Transpose::yes, Transpose::no, j1 - j0, d, s - j0, scale, ds + j0 * s + j0, s, q + j0 * 3 * h, 3 * h,
             0.0F, dk + j0 * 3 * h, 3 * h);
        // Query rows j0:j1 see key rows 0:j1: dq = scale dS k.
        gemm(Transpose::no, Transpose::no, j1 - j0, d, j1, scale, ds + j0 * s, s, k, 3 * h, 0.0F,
             dq + j0 * 3 * h, 3 * h);
      });
    }
  });
}

}  // namespace gpipe::exec::cpu
