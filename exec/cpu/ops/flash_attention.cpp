#include "exec/cpu/ops/flash_attention.hpp"

#include <algorithm>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/vector_math.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

namespace {

// Tile sizes: with the shape, they fix every product's order, whatever the team.
// Forward: 64 query rows keep their accumulator [64, d] and running max and
// sum in cache, and bound what a causal pass computes in vain (the upper half
// of each query tile's 64 x 64 block on the diagonal); 256 key rows per tile
// cut the rescaling passes and GEMM calls of 64-key tiles (ops_bench, S 128,
// H 256, b 16: 4.5 -> 3.4 ms), P's tile [64, 256] being 64 KiB.
constexpr std::int64_t kQueryTile = 64;
constexpr std::int64_t kKeyTile = 256;
// Backward, key tiles outer: causal, a key tile's query rows start at its
// first key, so 32 keys waste half a 32 x 32 block each (as the naive kernel's
// bands of 32); 128 query rows give the dk and dv products a deeper inner
// dimension. Against 64 x 64 tiles (ops_bench): b 16 7.8 -> 7.2 ms, b 2 0.76 -> 0.64 ms.
constexpr std::int64_t kBackQueryTile = 128;
constexpr std::int64_t kBackKeyTile = 32;

// The keys query row i sees among [j0, j1): up to j1, or (causal) up to i.
std::int64_t seen_in_tile(std::int64_t i, std::int64_t j0, std::int64_t j1, bool causal) {
  const std::int64_t end = causal ? std::min(j1, i + 1) : j1;
  return std::max<std::int64_t>(0, end - j0);
}

// One tile row of the online softmax: scores[0, cols) of query row i, the
// first `seen` of which it sees, become e^(score - new max) (0 beyond); the
// row's running max m and sum l are updated, and the factor by which the
// row's accumulator must be scaled is returned.
GPIPE_VECTOR_CLONES float online_softmax_row(std::int64_t cols, std::int64_t seen, float* scores, float& m,
                                              float& l) {
  if (seen == 0) {
    std::fill(scores, scores + cols, 0.0F);
    return 1.0F;
  }
  const float m_new = std::max(m, max_of(seen, scores));
  const float sum = exp_shifted_sum(seen, scores, m_new);
  std::fill(scores + seen, scores + cols, 0.0F);
  // The first tile's m is -inf: e^-inf scales an accumulator that is still 0.
  const float rescale = m == -INFINITY ? 0.0F : exp_nonpositive(m - m_new);
  l = l * rescale + sum;
  m = m_new;
  return rescale;
}

// x[0, count) *= factor.
GPIPE_VECTOR_CLONES void scale_row(std::int64_t count, float factor, float* x) {
#pragma omp simd
  for (std::int64_t c = 0; c < count; ++c) x[c] *= factor;
}

// y[0, count) = x[0, count) * factor.
GPIPE_VECTOR_CLONES void scaled_copy(std::int64_t count, float factor, const float* x, float* y) {
#pragma omp simd
  for (std::int64_t c = 0; c < count; ++c) y[c] = x[c] * factor;
}

// sum_c x[c] y[c], in SIMD lanes (an order fixed by count alone).
GPIPE_VECTOR_CLONES float dot(std::int64_t count, const float* x, const float* y) {
  float sum = 0.0F;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t c = 0; c < count; ++c) sum += x[c] * y[c];
  return sum;
}

// P's tile row from the kept lse: e^(score - lse) over the seen entries, 0 beyond.
// A NaN stays NaN, as in the forward's exp_shifted_sum (exp_nonpositive alone
// would turn it into e^-87 and hide a diverging run from --check-finite).
GPIPE_VECTOR_CLONES void probabilities_row(std::int64_t cols, std::int64_t seen, float lse, float* scores) {
#pragma omp simd
  for (std::int64_t j = 0; j < seen; ++j) {
    const float x = scores[j] - lse;
    scores[j] = nan_or(x, exp_nonpositive(x));
  }
  std::fill(scores + seen, scores + cols, 0.0F);
}

// dS = P * (dP - D) over a tile row, in place of dP.
GPIPE_VECTOR_CLONES void score_gradient_row(std::int64_t cols, const float* p, float d, float* dp) {
#pragma omp simd
  for (std::int64_t j = 0; j < cols; ++j) dp[j] = p[j] * (dp[j] - d);
}

// A tile row of P (query row i, keys from j0, the first `seen` of `cols`)
// through the dropout: each entry dropped or scaled, into `out` (may be p).
void drop_tile_row(const SampleMask& mask, std::int64_t element0, std::int64_t seen, float scale, const float* p,
                   float* out) {
  for (std::int64_t j = 0; j < seen; ++j) out[j] = mask.keeps(element0 + j) ? p[j] * scale : 0.0F;
}

bool drops(const FlashDropout& dropout) { return dropout.draw != nullptr && dropout.draw->drops(); }

struct Layout {
  std::int64_t s, h, d, group, keys;
  std::int64_t q_row, q_sample, kv_row, kv_sample;
  float scale;
  bool causal;
  const std::int64_t* positions;

  Layout(const AttentionShape& shape, const FlashOperands& in)
      : s(shape.seq),
        h(shape.hidden),
        d(shape.head_dim()),
        group(shape.group_size()),
        keys(in.keys),
        q_row(in.q_row),
        q_sample(in.q_sample),
        kv_row(in.kv_row),
        kv_sample(in.kv_sample),
        scale(1.0F / std::sqrt(static_cast<float>(shape.head_dim()))),
        causal(shape.causal),
        positions(in.positions) {}

  // Query row i's place in its sequence: the last key it sees when causal.
  [[nodiscard]] std::int64_t position(std::int64_t i) const { return positions == nullptr ? i : positions[i]; }
  // The first query row that sees key j (causal: positions increase), or s.
  [[nodiscard]] std::int64_t first_row_seeing(std::int64_t j) const {
    if (!causal) return 0;
    if (positions == nullptr) return std::min(j, s);
    return std::lower_bound(positions, positions + s, j) - positions;
  }
};

// The packed [b, S, (A+2G)d] qkv's operands: queries and keys one sequence.
FlashOperands packed(const AttentionShape& shape, const float* qkv) {
  const std::int64_t w = shape.qkv_width();
  const std::int64_t kv_base = shape.heads * shape.head_dim();
  return {.q = qkv,
          .k = qkv + kv_base,
          .v = qkv + kv_base + shape.kv_groups() * shape.head_dim(),
          .q_row = w,
          .q_sample = shape.seq * w,
          .kv_row = w,
          .kv_sample = shape.seq * w,
          .keys = shape.seq};
}

}  // namespace

void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse,
                             const FlashDropout& dropout) {
  flash_attention_forward(shape, packed(shape, qkv), out, lse, dropout);
}

void flash_attention_forward(const AttentionShape& shape, const FlashOperands& in, float* out, float* lse,
                             const FlashDropout& dropout) {
  const Layout l(shape, in);
  const bool dropping = drops(dropout);
  const float keep_scale = dropping ? dropout.draw->scale() : 1.0F;
  const std::int64_t pairs = shape.batch * shape.heads;
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    // This part's scratch, from the tensor pool and charged to no account:
    // only out and lse are the caller's.
    Tensor scores_tensor = Tensor::uninitialized({kQueryTile, kKeyTile});
    Tensor acc_tensor = Tensor::uninitialized({kQueryTile, l.d});
    Tensor stats_tensor = Tensor::uninitialized({2, kQueryTile});
    float* const scores = scores_tensor.data();
    float* const acc = acc_tensor.data();
    float* const max = stats_tensor.data();
    float* const sum = max + kQueryTile;
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.heads;
      const std::int64_t a = pair % shape.heads;
      const std::int64_t g = a / l.group;
      const float* q = in.q + n * l.q_sample + a * l.d;
      const float* k = in.k + n * l.kv_sample + g * l.d;
      const float* v = in.v + n * l.kv_sample + g * l.d;
      float* o = out + n * l.s * l.h + a * l.d;
      float* row_lse = lse + pair * l.s;
      // Dropout's entries are numbered over the whole sequence's keys.
      const std::int64_t head_element = (dropout.first_head + a) * l.keys * l.keys;
      const SampleMask mask = dropping ? SampleMask(*dropout.draw, DropoutSite::probabilities, n) : SampleMask({}, {}, 0);
      for (std::int64_t i0 = 0; i0 < l.s; i0 += kQueryTile) {
        const std::int64_t i1 = std::min(l.s, i0 + kQueryTile);
        const std::int64_t rows = i1 - i0;
        std::fill(max, max + rows, -INFINITY);
        std::fill(sum, sum + rows, 0.0F);
        const std::int64_t keys = l.causal ? std::min(l.keys, l.position(i1 - 1) + 1) : l.keys;
        for (std::int64_t j0 = 0; j0 < keys; j0 += kKeyTile) {
          const std::int64_t j1 = std::min(keys, j0 + kKeyTile);
          const std::int64_t cols = j1 - j0;
          gemm(Transpose::no, Transpose::yes, rows, cols, l.d, l.scale, q + i0 * l.q_row, l.q_row, k + j0 * l.kv_row,
               l.kv_row, 0.0F, scores, kKeyTile);
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t at = l.position(i0 + r);
            const float rescale = online_softmax_row(cols, seen_in_tile(at, j0, j1, l.causal),
                                                     scores + r * kKeyTile, max[r], sum[r]);
            if (j0 > 0 && rescale != 1.0F) scale_row(l.d, rescale, acc + r * l.d);
            // The sum above is the undropped row's; P v takes the dropped.
            if (dropping) {
              float* row = scores + r * kKeyTile;
              drop_tile_row(mask, head_element + at * l.keys + j0, seen_in_tile(at, j0, j1, l.causal), keep_scale,
                            row, row);
            }
          }
          // The first key tile writes the accumulator, the others add to it.
          gemm(Transpose::no, Transpose::no, rows, l.d, cols, 1.0F, scores, kKeyTile, v + j0 * l.kv_row, l.kv_row,
               j0 > 0 ? 1.0F : 0.0F, acc, l.d);
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          scaled_copy(l.d, 1.0F / sum[r], acc + r * l.d, o + (i0 + r) * l.h);
          row_lse[i0 + r] = max[r] + std::log(sum[r]);
        }
      }
    }
  });
}

void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, const FlashDropout& dropout) {
  float* dk = dqkv + shape.heads * shape.head_dim();
  flash_attention_backward(shape, packed(shape, qkv), out, lse, dout,
                           {.dq = dqkv, .dk = dk, .dv = dk + shape.kv_groups() * shape.head_dim()}, dropout);
}

void flash_attention_backward(const AttentionShape& shape, const FlashOperands& in, const float* out,
                              const float* lse, const float* dout, const FlashGradients& grads,
                              const FlashDropout& dropout) {
  const Layout l(shape, in);
  const bool dropping = drops(dropout);
  const float keep_scale = dropping ? dropout.draw->scale() : 1.0F;
  // (sample, kv head) pairs: a group's query heads add into one dk and dv.
  const std::int64_t pairs = shape.batch * shape.kv_groups();
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    Tensor probs_tensor = Tensor::uninitialized({kBackQueryTile, kBackKeyTile});
    Tensor dscores_tensor = Tensor::uninitialized({kBackQueryTile, kBackKeyTile});
    Tensor delta_tensor = Tensor::uninitialized({l.s});
    // With dropout: the tile of P dropped (dv's product), beside P (dS's).
    Tensor dropped_tensor = dropping ? Tensor::uninitialized({kBackQueryTile, kBackKeyTile}) : Tensor();
    float* const p = probs_tensor.data();
    float* const pd = dropping ? dropped_tensor.data() : p;
    float* const ds = dscores_tensor.data();
    float* const delta = delta_tensor.data();
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.kv_groups();
      const std::int64_t g = pair % shape.kv_groups();
      const float* k = in.k + n * l.kv_sample + g * l.d;
      const float* v = in.v + n * l.kv_sample + g * l.d;
      float* dk = grads.dk + n * l.kv_sample + g * l.d;
      float* dv = grads.dv + n * l.kv_sample + g * l.d;
      for (std::int64_t a = g * l.group; a < (g + 1) * l.group; ++a) {
        const float* q = in.q + n * l.q_sample + a * l.d;
        const float* o = out + n * l.s * l.h + a * l.d;
        const float* dout_head = dout + n * l.s * l.h + a * l.d;
        const float* row_lse = lse + (n * shape.heads + a) * l.s;
        float* dq = grads.dq + n * l.q_sample + a * l.d;
        const std::int64_t head_element = (dropout.first_head + a) * l.keys * l.keys;
        const SampleMask mask = dropping ? SampleMask(*dropout.draw, DropoutSite::probabilities, n) : SampleMask({}, {}, 0);
        // D_i = dout_i . out_i, the softmax backward's row term.
        for (std::int64_t i = 0; i < l.s; ++i) delta[i] = dot(l.d, dout_head + i * l.h, o + i * l.h);
        for (std::int64_t j0 = 0; j0 < l.keys; j0 += kBackKeyTile) {
          const std::int64_t j1 = std::min(l.keys, j0 + kBackKeyTile);
          const std::int64_t cols = j1 - j0;
          // Causal: only the query rows from the first at or past j0 see these keys.
          const std::int64_t first = l.first_row_seeing(j0);
          // Keys no query row sees (past the last query's place): no product
          // writes their gradients, so they are zeroed here, once per group.
          if (first == l.s && a == g * l.group) {
            for (std::int64_t j = j0; j < j1; ++j) {
              std::fill(dk + j * l.kv_row, dk + j * l.kv_row + l.d, 0.0F);
              std::fill(dv + j * l.kv_row, dv + j * l.kv_row + l.d, 0.0F);
            }
          }
          for (std::int64_t i0 = first; i0 < l.s; i0 += kBackQueryTile) {
            const std::int64_t i1 = std::min(l.s, i0 + kBackQueryTile);
            const std::int64_t rows = i1 - i0;
            // No pass zeroes the gradients: the first product into each
            // overwrites it (dk, dv: the group's first head at the first query
            // tile; dq: the first key tile, which every query tile sees).
            const float into_kv = a == g * l.group && i0 == first ? 0.0F : 1.0F;
            const float into_q = j0 == 0 ? 0.0F : 1.0F;
            gemm(Transpose::no, Transpose::yes, rows, cols, l.d, l.scale, q + i0 * l.q_row, l.q_row,
                 k + j0 * l.kv_row, l.kv_row, 0.0F, p, kBackKeyTile);
            for (std::int64_t r = 0; r < rows; ++r) {
              const std::int64_t at = l.position(i0 + r);
              const std::int64_t seen = seen_in_tile(at, j0, j1, l.causal);
              probabilities_row(cols, seen, row_lse[i0 + r], p + r * kBackKeyTile);
              if (dropping) {
                float* row = pd + r * kBackKeyTile;
                drop_tile_row(mask, head_element + at * l.keys + j0, seen, keep_scale, p + r * kBackKeyTile, row);
                std::fill(row + seen, row + cols, 0.0F);
              }
            }
            // dv += Pd^T dout (Pd: P dropped, or P); dP = dout v^T, through
            // the dropout; dS = P (dP - D); dk += scale dS^T q; dq += scale dS k.
            // D = dout . out holds with dropout too: out is Pd v.
            gemm(Transpose::yes, Transpose::no, cols, l.d, rows, 1.0F, pd, kBackKeyTile, dout_head + i0 * l.h, l.h,
                 into_kv, dv + j0 * l.kv_row, l.kv_row);
            gemm(Transpose::no, Transpose::yes, rows, cols, l.d, 1.0F, dout_head + i0 * l.h, l.h, v + j0 * l.kv_row,
                 l.kv_row, 0.0F, ds, kBackKeyTile);
            for (std::int64_t r = 0; r < rows; ++r) {
              if (dropping) {
                const std::int64_t at = l.position(i0 + r);
                float* row = ds + r * kBackKeyTile;
                drop_tile_row(mask, head_element + at * l.keys + j0, seen_in_tile(at, j0, j1, l.causal), keep_scale,
                              row, row);
              }
              score_gradient_row(cols, p + r * kBackKeyTile, delta[i0 + r], ds + r * kBackKeyTile);
            }
            gemm(Transpose::yes, Transpose::no, cols, l.d, rows, l.scale, ds, kBackKeyTile, q + i0 * l.q_row, l.q_row,
                 into_kv, dk + j0 * l.kv_row, l.kv_row);
            gemm(Transpose::no, Transpose::no, rows, l.d, cols, l.scale, ds, kBackKeyTile, k + j0 * l.kv_row,
                 l.kv_row, into_q, dq + i0 * l.q_row, l.q_row);
          }
        }
      }
    }
  });
}

}  // namespace gpipe::exec::cpu
