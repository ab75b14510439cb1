// Multi-head self-attention (the part between the qkv and output
// projections), naive: per sample and query head, P = softmax(q k^T / sqrt(d)
// [+ causal mask]), out = P v, with d = H / A; forward and backward, GEMMs
// per (sample, head) addressing the head's columns in place (strided leading
// dimensions). Causal, the products run in bands of query rows that stop at
// the diagonal (the masked products are never computed).
//
// Grouped-query attention: A query heads share G key/value heads (A/G per
// group; G = A is multi-head attention). Layouts: qkv [b, S, (A+2G)d], each
// token's row [q (A d) | k (G d) | v (G d)], query head a reading kv head
// a / (A/G); probs [b, A, S, S], zero above the diagonal when causal; out and
// dout [b, S, A d], heads side by side. The flash kernel
// (flash_attention.hpp) takes the same shapes and layouts.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t hidden = 0;    // A d: the queries' (and the output's) width
  std::int64_t heads = 0;     // A
  std::int64_t kv_heads = 0;  // G; 0 means A
  bool causal = true;

  [[nodiscard]] std::int64_t head_dim() const { return hidden / heads; }
  [[nodiscard]] std::int64_t kv_groups() const { return kv_heads > 0 ? kv_heads : heads; }
  [[nodiscard]] std::int64_t group_size() const { return heads / kv_groups(); }
  // One token's packed row of q, k and v.
  [[nodiscard]] std::int64_t qkv_width() const { return (heads + 2 * kv_groups()) * head_dim(); }
};

// Dropout of the probabilities (exec/cpu/ops/dropout.hpp): P v takes
// `dropped` [b, A, S, S], P with `mask`'s zeros and the rest times `scale`;
// the backward reads both. A null mask: no dropout.
struct ProbabilitiesDropout {
  const std::uint8_t* mask = nullptr;
  float scale = 1;
  float* dropped = nullptr;  // written by the forward, read by the backward
};

void attention_forward(const AttentionShape& shape, const float* qkv, float* probs, float* out,
                       const ProbabilitiesDropout& dropout = {});

// dqkv [b, S, (A+2G)d] is overwritten with the gradients of q, k and v (a kv
// head's summed over the query heads that read it).
void attention_backward(const AttentionShape& shape, const float* qkv, const float* probs,
                        const float* dout, float* dqkv, const ProbabilitiesDropout& dropout = {});

}  // namespace gpipe::exec::cpu
