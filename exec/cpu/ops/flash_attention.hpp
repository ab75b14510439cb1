// Flash attention (Dao et al., FlashAttention-2) on the CPU: the same
// attention as attention.hpp, with the same shapes and packed qkv layout, but
// it never holds the S x S probabilities. The forward runs over tiles of
// query and key rows with an online softmax (a running maximum and sum per
// query row, the output accumulator rescaled as they grow) and keeps only
// each query row's log-sum-exp, lse = log sum_j exp(score_ij) of the scaled
// (and masked) scores: [b, A, S] instead of P's [b, A, S, S]. The backward
// rebuilds P = exp(score - lse) tile by tile from q, k and lse.
//
// Why: P is the one activation of a block that grows as S^2 (A S^2 floats per
// sample against a few S H); with lse in its place the block keeps O(S) for
// attention, so longer sequences and more micro-batches in flight fit. The
// price is FLOPs: the backward recomputes q k^T and P instead of reading P.
//
// FLOPs, as models/attention_cost.hpp counts them: one product over a head is
// 2 S^2 d when full; the forward does two (q k^T, P v), 4 S^2 d per head; the
// backward five (q k^T again, dv = P^T dout, dP = dout v^T, dq = dS k,
// dk = dS^T q), 2.5 times the forward. Causal, the tiles above the diagonal are
// skipped and the count is the triangle, S(S+1)/2 entries for S^2 (the kernel
// also computes, and discards, the masked half of the block on the diagonal:
// 64 x 64 per query tile forward, 32 x 32 per key tile backward).
#pragma once

#include <cstdint>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/dropout.hpp"

namespace gpipe::exec::cpu {

// Dropout of the probabilities, drawn in the kernel tile by tile and kept
// nowhere: head a's entry (i, j) of sample n is kept when
// SampleMask(*draw, probabilities, n) keeps ((first_head + a) S + i) S + j,
// the same entries the naive kernel's mask [b, A, S, S] holds (first_head
// places a tensor-parallel part's heads among the layer's). A null draw, or
// one that drops nothing: no dropout. The row sums stay those of the
// undropped P, as in FlashAttention, so lse is the same with or without it.
struct FlashDropout {
  const DropoutDraw* draw = nullptr;
  std::int64_t first_head = 0;
};

// out [b, S, A d]; lse [b, A, S].
void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse,
                             const FlashDropout& dropout = {});

// Queries and keys in buffers of their own (context parallelism,
// exec/cpu/context_attention.hpp): shape.seq query rows a sample,
// each at its place in a sequence of `keys` keys and values. Strides are in
// floats; query head a's columns start at q + a d, kv head g's at k + g d and
// v + g d. Causal, query row i sees the keys up to positions[i] (increasing;
// null: i). Dropout numbers its entries over the `keys` x `keys` scores.
struct FlashOperands {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  std::int64_t q_row = 0;      // floats between a sample's query rows
  std::int64_t q_sample = 0;   // between samples' first query rows
  std::int64_t kv_row = 0;     // the same for k and v
  std::int64_t kv_sample = 0;
  std::int64_t keys = 0;       // key rows a sample
  const std::int64_t* positions = nullptr;
};

// Where the backward writes: dq at q's strides, dk and dv at k's and v's.
// Every element of them that the forward's operands name is overwritten.
struct FlashGradients {
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
};

// out [b, S, A d] and lse [b, A, S] as above, S = shape.seq query rows.
void flash_attention_forward(const AttentionShape& shape, const FlashOperands& in, float* out, float* lse,
                             const FlashDropout& dropout = {});

// From the forward's qkv, out and lse and the output gradient dout [b, S, A d]:
// dqkv [b, S, (A+2G)d] overwritten with the gradients of q, k and v.
void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, const FlashDropout& dropout = {});
void flash_attention_backward(const AttentionShape& shape, const FlashOperands& in, const float* out,
                              const float* lse, const float* dout, const FlashGradients& grads,
                              const FlashDropout& dropout = {});

}  // namespace gpipe::exec::cpu
