#include "exec/cpu/ops/cached_attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/cpu/ops/gemm.hpp"

namespace gpipe::exec::cpu {

void cached_attention_forward(const CachedAttentionShape& shape, const float* qkv, const float* prev_k,
                              const float* prev_v, float* out) {
  const std::int64_t t = shape.tokens;
  const std::int64_t h = shape.hidden;
  const std::int64_t d = h / shape.heads;
  const std::int64_t row = 3 * h;  // one token's q | k | v
  const float scale = 1.0F / std::sqrt(static_cast<float>(d));
  std::vector<float> scores(static_cast<std::size_t>(t * 2 * t));
  float* const s = scores.data();
  for (std::int64_t n = 0; n < shape.batch; ++n) {
    const float* sample = qkv + n * t * row;
    const float* kept_k = prev_k + n * t * h;
    const float* kept_v = prev_v + n * t * h;
    float* o = out + n * t * h;
    for (std::int64_t a = 0; a < shape.heads; ++a) {
      const float* q = sample + a * d;
      const float* k = sample + h + a * d;
      const float* v = sample + 2 * h + a * d;
      // The previous chunk's keys in columns [0, T), the chunk's own in [T, 2T).
      gemm(Transpose::no, Transpose::yes, t, t, d, scale, q, row, kept_k + a * d, h, 0.0F, s, 2 * t);
      gemm(Transpose::no, Transpose::yes, t, t, d, scale, q, row, k, row, 0.0F, s + t, 2 * t);
      for (std::int64_t i = 0; i < t; ++i) {
        float* r = s + i * 2 * t;
        const float top = *std::max_element(r, r + 2 * t);
        float sum = 0.0F;
        for (std::int64_t j = 0; j < 2 * t; ++j) {
          r[j] = std::exp(r[j] - top);
          sum += r[j];
        }
        const float inv = 1.0F / sum;
        for (std::int64_t j = 0; j < 2 * t; ++j) r[j] *= inv;
      }
      gemm(Transpose::no, Transpose::no, t, d, t, 1.0F, s, 2 * t, kept_v + a * d, h, 0.0F, o + a * d, h);
      gemm(Transpose::no, Transpose::no, t, d, t, 1.0F, s + t, 2 * t, v, row, 1.0F, o + a * d, h);
    }
  }
}

}  // namespace gpipe::exec::cpu
