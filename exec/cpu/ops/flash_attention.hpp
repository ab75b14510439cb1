// Flash attention (Dao et al., FlashAttention-2) on the CPU: the same
// attention as attention.hpp, with the same shapes and packed qkv layout, but
// it never holds the S x S probabilities. The forward runs over tiles of
// query and key rows with an online softmax (a running maximum and sum per
// query row, the output accumulator rescaled as they grow) and keeps only
// each query row's log-sum-exp, lse = log sum_j exp(score_ij) of the scaled
// (and masked) scores: [b, A, S] instead of P's [b, A, S, S]. The backward
// rebuilds P = exp(score - lse) tile by tile from q, k and lse.
//
// FLOPs (models/attention_cost.hpp): causal, the tiles above the diagonal are
// skipped; the backward's five products per tile (q k^T again, dv, dP, dq,
// dk) make it 2.5 times the forward's two.
#pragma once

#include "exec/cpu/ops/attention.hpp"

namespace gpipe::exec::cpu {

// out [b, S, A d]; lse [b, A, S].
void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse);

// From the forward's qkv, out and lse and the output gradient dout [b, S, A d]:
// dqkv [b, S, (A+2G)d] overwritten with the gradients of q, k and v.
void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv);

}  // namespace gpipe::exec::cpu
