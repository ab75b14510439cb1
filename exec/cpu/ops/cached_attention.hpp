// Attention over the previous chunk and its own (dit's cache=1, inference
// streams): each of a chunk's T queries attends, without a mask, over 2T
// keys, the T the block kept from the stream's previous chunk and the
// chunk's own T, and over their values. Forward only: a stream has no
// backward. Per sample and head (d = H/A):
//   S = q [k_prev; k]^T / sqrt(d)  [T, 2T];  P = softmax(S) by row;  o = P [v_prev; v]
// the products by GEMM, four of T x T x d each, the softmax in float with
// the row's maximum subtracted.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

struct CachedAttentionShape {
  std::int64_t batch = 0;   // b
  std::int64_t tokens = 0;  // T
  std::int64_t hidden = 0;  // H = A d
  std::int64_t heads = 0;   // A
};

// qkv [b, T, 3H] (q | k | v of each token); prev_k, prev_v [b, T, H];
// out [b, T, H] is overwritten.
void cached_attention_forward(const CachedAttentionShape& shape, const float* qkv, const float* prev_k,
                              const float* prev_v, float* out);

}  // namespace gpipe::exec::cpu
