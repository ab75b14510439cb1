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

// Row i of scores[S,S] becomes the softmax of the entries it sees: its first
// i+1 when causal (the rest need not have been computed, and become exactly
// 0), all S when not.
GPIPE_VECTOR_CLONES void softmax_rows(std::int64_t seq, bool causal, float* scores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    float* row = scores + i * seq;
    const std::int64_t seen = causal ? i + 1 : seq;
    const float max = max_of(seen, row);
    const float inv = 1.0F / exp_shifted_sum(seen, row, max);
#pragma omp simd
    for (std::int64_t j = 0; j < seen; ++j) row[j] *= inv;
    std::fill(row + seen, row + seq, 0.0F);
  }
}

// Softmax's backward, row by row: dS = P * (dP - sum_j P dP), in place of dP,
// over the entries each row sees; the masked dS are set to exactly 0 (dP
// there was never computed).
GPIPE_VECTOR_CLONES void softmax_rows_backward(std::int64_t seq, bool causal, const float* probs,
                                               float* dscores) {
  for (std::int64_t i = 0; i < seq; ++i) {
    const float* pr = probs + i * seq;
    float* dr = dscores + i * seq;
    const std::int64_t seen = causal ? i + 1 : seq;
    float dot = 0.0F;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < seen; ++j) dot += pr[j] * dr[j];
#pragma omp simd
    for (std::int64_t j = 0; j < seen; ++j) dr[j] = pr[j] * (dr[j] - dot);
    std::fill(dr + seen, dr + seq, 0.0F);
  }
}

// dropped = P with the mask's zeros and the rest scaled, over the whole S x S
// (the masked entries of P are 0, and stay so).
GPIPE_VECTOR_CLONES void drop_probabilities(std::int64_t count, const std::uint8_t* mask, float scale,
                                            const float* probs, float* dropped) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) dropped[i] = mask[i] != 0 ? probs[i] * scale : 0.0F;
}

// dP = d(dropped) with the mask's zeros and the rest scaled, in place, over
// the entries each row sees.
GPIPE_VECTOR_CLONES void mask_rows(std::int64_t seq, bool causal, const std::uint8_t* mask, float scale,
                                   float* grad) {
  for (std::int64_t i = 0; i < seq; ++i) {
    const std::int64_t seen = causal ? i + 1 : seq;
#pragma omp simd
    for (std::int64_t j = 0; j < seen; ++j) grad[i * seq + j] = mask[i * seq + j] != 0 ? grad[i * seq + j] * scale : 0.0F;
  }
}

}  // namespace

void attention_forward(const AttentionShape& shape, const float* qkv, float* probs, float* out,
                       const ProbabilitiesDropout& dropout) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const std::int64_t w = shape.qkv_width();
  const std::int64_t kv_base = shape.heads * d;  // k's first column
  const std::int64_t v_base = kv_base + shape.kv_groups() * d;
  const bool causal = shape.causal;
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  const std::int64_t pairs = shape.batch * shape.heads;
  // (sample, head) pairs are independent: split over the rank's team.
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.heads;
      const std::int64_t a = pair % shape.heads;
      const std::int64_t g = a / shape.group_size();
      const float* sample = qkv + n * s * w;
      const float* q = sample + a * d;
      const float* k = sample + kv_base + g * d;
      const float* v = sample + v_base + g * d;
      float* p = probs + pair * s * s;
      float* o = out + n * s * h + a * d;
      // S[i0:i1, 0:seen] = scale q[i0:i1] k[0:seen]^T, band by band; then the softmax.
      for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
        gemm(Transpose::no, Transpose::yes, i1 - i0, causal ? i1 : s, d, scale, q + i0 * w, w, k, w, 0.0F,
             p + i0 * s, s);
      });
      softmax_rows(s, causal, p);
      const float* pv = p;  // what P v reads: P, or P dropped
      if (dropout.mask != nullptr) {
        float* dropped = dropout.dropped + pair * s * s;
        drop_probabilities(s * s, dropout.mask + pair * s * s, dropout.scale, p, dropped);
        pv = dropped;
      }
      // out[i0:i1] = P[i0:i1, 0:seen] v[0:seen].
      for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
        const std::int64_t seen = causal ? i1 : s;
        gemm(Transpose::no, Transpose::no, i1 - i0, d, seen, 1.0F, pv + i0 * s, s, v, w, 0.0F, o + i0 * h, h);
      });
    }
  });
}

void attention_backward(const AttentionShape& shape, const float* qkv, const float* probs,
                        const float* dout, float* dqkv, const ProbabilitiesDropout& dropout) {
  const std::int64_t s = shape.seq;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = shape.head_dim();
  const std::int64_t w = shape.qkv_width();
  const std::int64_t group = shape.group_size();
  const std::int64_t kv_base = shape.heads * d;
  const std::int64_t v_base = kv_base + shape.kv_groups() * d;
  const bool causal = shape.causal;
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  // (sample, kv head) pairs: the query heads of a group add into one dk and
  // dv, so a group stays in one part, summing its heads in order.
  const std::int64_t pairs = shape.batch * shape.kv_groups();
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    // Reused by this part's heads; from the tensor pool, so a step allocates nothing.
    Tensor dscores = Tensor::uninitialized({s, s});
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.kv_groups();
      const std::int64_t g = pair % shape.kv_groups();
      const float* sample = qkv + n * s * w;
      float* dsample = dqkv + n * s * w;
      const float* k = sample + kv_base + g * d;
      const float* v = sample + v_base + g * d;
      float* dk = dsample + kv_base + g * d;
      float* dv = dsample + v_base + g * d;
      for (std::int64_t a = g * group; a < (g + 1) * group; ++a) {
        // The group's first head writes dk and dv, the others add to them.
        const float into = a == g * group ? 0.0F : 1.0F;
        const float* q = sample + a * d;
        const std::int64_t head = (n * shape.heads + a) * s * s;
        const float* p = probs + head;
        // What P v read (dv = its transpose times dout): P, or P dropped.
        const float* pv = dropout.mask != nullptr ? dropout.dropped + head : p;
        const float* dout_head = dout + n * s * h + a * d;
        float* dq = dsample + a * d;
        float* ds = dscores.data();
        // dP[i0:i1, 0:seen] = dout[i0:i1] v[0:seen]^T; then dS over the same entries, 0 beyond.
        for_bands(s, [&](std::int64_t i0, std::int64_t i1) {
          gemm(Transpose::no, Transpose::yes, i1 - i0, causal ? i1 : s, d, 1.0F, dout_head + i0 * h, h, v, w,
               0.0F, ds + i0 * s, s);
        });
        // Through the dropout first: d(dropped) -> dP.
        if (dropout.mask != nullptr) mask_rows(s, causal, dropout.mask + head, dropout.scale, ds);
        softmax_rows_backward(s, causal, p, ds);
        for_bands(s, [&](std::int64_t j0, std::int64_t j1) {
          // Key rows j0:j1 are seen by query rows first:S (causal: from j0):
          // dv = P^T dout, dk = scale dS^T q.
          const std::int64_t first = causal ? j0 : 0;
          gemm(Transpose::yes, Transpose::no, j1 - j0, d, s - first, 1.0F, pv + first * s + j0, s,
               dout_head + first * h, h, into, dv + j0 * w, w);
          gemm(Transpose::yes, Transpose::no, j1 - j0, d, s - first, scale, ds + first * s + j0, s,
               q + first * w, w, into, dk + j0 * w, w);
          // Query rows j0:j1 see key rows 0:seen: dq = scale dS k.
          gemm(Transpose::no, Transpose::no, j1 - j0, d, causal ? j1 : s, scale, ds + j0 * s, s, k, w, 0.0F,
               dq + j0 * w, w);
        });
      }
    }
  });
}

}  // namespace gpipe::exec::cpu
