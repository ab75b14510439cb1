#include "exec/cpu/ops/flash_attention.hpp"

#include <algorithm>
#include <cmath>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/vector_math.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

namespace {

// Query and key rows per tile: a 64 x 64 score tile (16 KiB) and the
// accumulator stay in cache, and the GEMMs are large enough for OpenBLAS.
constexpr std::int64_t kTile = 64;

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

// P's tile row from the kept lse: e^(score - lse) over the seen entries, 0 beyond.
GPIPE_VECTOR_CLONES void probabilities_row(std::int64_t cols, std::int64_t seen, float lse, float* scores) {
#pragma omp simd
  for (std::int64_t j = 0; j < seen; ++j) scores[j] = exp_nonpositive(scores[j] - lse);
  std::fill(scores + seen, scores + cols, 0.0F);
}

// dS = P * (dP - D) over a tile row, in place of dP.
GPIPE_VECTOR_CLONES void score_gradient_row(std::int64_t cols, const float* p, float d, float* dp) {
#pragma omp simd
  for (std::int64_t j = 0; j < cols; ++j) dp[j] = p[j] * (dp[j] - d);
}

struct Layout {
  std::int64_t s, h, d, w, kv_base, v_base, group;
  float scale;
  bool causal;

  explicit Layout(const AttentionShape& shape)
      : s(shape.seq),
        h(shape.hidden),
        d(shape.head_dim()),
        w(shape.qkv_width()),
        kv_base(shape.heads * shape.head_dim()),
        v_base(kv_base + shape.kv_groups() * shape.head_dim()),
        group(shape.group_size()),
        scale(1.0F / std::sqrt(static_cast<float>(shape.head_dim()))),
        causal(shape.causal) {}
};

}  // namespace

void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse) {
  const Layout l(shape);
  const std::int64_t pairs = shape.batch * shape.heads;
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    Tensor scores = Tensor::uninitialized({kTile, kTile});
    Tensor acc = Tensor::uninitialized({kTile, l.d});
    Tensor max = Tensor::uninitialized({kTile});
    Tensor sum = Tensor::uninitialized({kTile});
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.heads;
      const std::int64_t a = pair % shape.heads;
      const std::int64_t g = a / l.group;
      const float* sample = qkv + n * l.s * l.w;
      const float* q = sample + a * l.d;
      const float* k = sample + l.kv_base + g * l.d;
      const float* v = sample + l.v_base + g * l.d;
      float* o = out + n * l.s * l.h + a * l.d;
      float* row_lse = lse + pair * l.s;
      for (std::int64_t i0 = 0; i0 < l.s; i0 += kTile) {
        const std::int64_t i1 = std::min(l.s, i0 + kTile);
        const std::int64_t rows = i1 - i0;
        std::fill(max.data(), max.data() + rows, -INFINITY);
        std::fill(sum.data(), sum.data() + rows, 0.0F);
        std::fill(acc.data(), acc.data() + rows * l.d, 0.0F);
        const std::int64_t keys = l.causal ? i1 : l.s;
        for (std::int64_t j0 = 0; j0 < keys; j0 += kTile) {
          const std::int64_t j1 = std::min(keys, j0 + kTile);
          const std::int64_t cols = j1 - j0;
          float* sc = scores.data();
          gemm(Transpose::no, Transpose::yes, rows, cols, l.d, l.scale, q + i0 * l.w, l.w, k + j0 * l.w, l.w,
               0.0F, sc, kTile);
          for (std::int64_t r = 0; r < rows; ++r) {
            const float rescale = online_softmax_row(cols, seen_in_tile(i0 + r, j0, j1, l.causal),
                                                     sc + r * kTile, max.data()[r], sum.data()[r]);
            if (rescale != 1.0F) {
              float* acc_row = acc.data() + r * l.d;
              for (std::int64_t c = 0; c < l.d; ++c) acc_row[c] *= rescale;
            }
          }
          gemm(Transpose::no, Transpose::no, rows, l.d, cols, 1.0F, sc, kTile, v + j0 * l.w, l.w, 1.0F,
               acc.data(), l.d);
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          const float inv = 1.0F / sum.data()[r];
          for (std::int64_t c = 0; c < l.d; ++c) o[(i0 + r) * l.h + c] = acc.data()[r * l.d + c] * inv;
          row_lse[i0 + r] = max.data()[r] + std::log(sum.data()[r]);
        }
      }
    }
  });
}

void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv) {
  const Layout l(shape);
  // (sample, kv head) pairs: a group's query heads add into one dk and dv.
  const std::int64_t pairs = shape.batch * shape.kv_groups();
  for_ranges(pairs, parts_for(pairs, 1), [&](std::int64_t begin, std::int64_t end) {
    Tensor probs = Tensor::uninitialized({kTile, kTile});
    Tensor dscores = Tensor::uninitialized({kTile, kTile});
    Tensor delta = Tensor::uninitialized({l.s});
    for (std::int64_t pair = begin; pair < end; ++pair) {
      const std::int64_t n = pair / shape.kv_groups();
      const std::int64_t g = pair % shape.kv_groups();
      const float* sample = qkv + n * l.s * l.w;
      float* dsample = dqkv + n * l.s * l.w;
      const float* k = sample + l.kv_base + g * l.d;
      const float* v = sample + l.v_base + g * l.d;
      float* dk = dsample + l.kv_base + g * l.d;
      float* dv = dsample + l.v_base + g * l.d;
      for (std::int64_t j = 0; j < l.s; ++j) {
        std::fill(dk + j * l.w, dk + j * l.w + l.d, 0.0F);
        std::fill(dv + j * l.w, dv + j * l.w + l.d, 0.0F);
      }
      for (std::int64_t a = g * l.group; a < (g + 1) * l.group; ++a) {
        const float* q = sample + a * l.d;
        const float* o = out + n * l.s * l.h + a * l.d;
        const float* dout_head = dout + n * l.s * l.h + a * l.d;
        const float* row_lse = lse + (n * shape.heads + a) * l.s;
        float* dq = dsample + a * l.d;
        // D_i = dout_i . out_i, the softmax backward's row term.
        for (std::int64_t i = 0; i < l.s; ++i) {
          float dot = 0.0F;
          for (std::int64_t c = 0; c < l.d; ++c) dot += dout_head[i * l.h + c] * o[i * l.h + c];
          delta.data()[i] = dot;
          std::fill(dq + i * l.w, dq + i * l.w + l.d, 0.0F);
        }
        for (std::int64_t j0 = 0; j0 < l.s; j0 += kTile) {
          const std::int64_t j1 = std::min(l.s, j0 + kTile);
          const std::int64_t cols = j1 - j0;
          // Causal: only query tiles from the one holding row j0 see these keys.
          for (std::int64_t i0 = l.causal ? j0 / kTile * kTile : 0; i0 < l.s; i0 += kTile) {
            const std::int64_t i1 = std::min(l.s, i0 + kTile);
            const std::int64_t rows = i1 - i0;
            float* p = probs.data();
            float* ds = dscores.data();
            gemm(Transpose::no, Transpose::yes, rows, cols, l.d, l.scale, q + i0 * l.w, l.w, k + j0 * l.w, l.w,
                 0.0F, p, kTile);
            for (std::int64_t r = 0; r < rows; ++r) {
              probabilities_row(cols, seen_in_tile(i0 + r, j0, j1, l.causal), row_lse[i0 + r], p + r * kTile);
            }
            // dv += P^T dout; dP = dout v^T; dS = P (dP - D); dk += scale dS^T q; dq += scale dS k.
            gemm(Transpose::yes, Transpose::no, cols, l.d, rows, 1.0F, p, kTile, dout_head + i0 * l.h, l.h, 1.0F,
                 dv + j0 * l.w, l.w);
            gemm(Transpose::no, Transpose::yes, rows, cols, l.d, 1.0F, dout_head + i0 * l.h, l.h, v + j0 * l.w,
                 l.w, 0.0F, ds, kTile);
            for (std::int64_t r = 0; r < rows; ++r) {
              score_gradient_row(cols, p + r * kTile, delta.data()[i0 + r], ds + r * kTile);
            }
            gemm(Transpose::yes, Transpose::no, cols, l.d, rows, l.scale, ds, kTile, q + i0 * l.w, l.w, 1.0F,
                 dk + j0 * l.w, l.w);
            gemm(Transpose::no, Transpose::no, rows, l.d, cols, l.scale, ds, kTile, k + j0 * l.w, l.w, 1.0F,
                 dq + i0 * l.w, l.w);
          }
        }
      }
    }
  });
}

}  // namespace gpipe::exec::cpu
