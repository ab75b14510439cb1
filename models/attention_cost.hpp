// The matrix-product FLOPs of one sample's attention (the part between the
// qkv and output projections), per the conventions of models/model.hpp.
//
// One "product" is q k^T (or P v, dP, dq, dk, dv) over all heads: 2 d A E
// FLOPs with E the score entries a kernel computes per head, and d A = H.
//   naive: E = S^2. It materialises the whole S x S matrix (the causal
//          mask's half is computed too, then zeroed). Forward 2 products
//          (q k^T, P v); backward 4 (dP, dv, dq, dk), as GPT-2's count.
//   flash: E = S(S+1)/2 when causal (it skips the tiles above the
//          diagonal; the diagonal's own entries are counted), S^2 when not.
//          Forward 2 products; backward 5: it recomputes q k^T first, so
//          backward is 2.5x the forward (FlashAttention's own accounting,
//          Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py).
#pragma once

#include <cstdint>

#include "models/model.hpp"

namespace gpipe::models {

struct AttentionFlops {
  double forward = 0;
  double backward = 0;  // all in I: attention has no weights
};

[[nodiscard]] AttentionFlops attention_flops(std::int64_t seq, std::int64_t hidden, bool causal,
                                             Attention attention);

}  // namespace gpipe::models
