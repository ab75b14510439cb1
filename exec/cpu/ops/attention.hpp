// Causal multi-head self-attention (the part between the qkv and output
// projections): per sample and head, P = softmax(q k^T / sqrt(d) + causal
// mask), out = P v, with d = H / A; forward and backward, GEMMs per (sample,
// head) addressing the head's columns in place (strided leading dimensions),
// in bands of query rows that stop at the diagonal (the masked products are
// never computed).
//
// Layouts: qkv [b, S, 3H], each token's row [q | k | v], head h owning columns
// [h d, (h+1) d) of each third; probs [b, A, S, S], zero above the diagonal;
// out and dout [b, S, H], heads side by side.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  [[nodiscard]] std::int64_t head_dim() const { return hidden / heads; }
};

void attention_forward(const AttentionShape& shape, const float* qkv, float* probs, float* out);

// dqkv [b, S, 3H] is overwritten with the gradients of q, k and v.
void attention_backward(const AttentionShape& shape, const float* qkv, const float* probs,
                        const float* dout, float* dqkv);

}  // namespace gpipe::exec::cpu
