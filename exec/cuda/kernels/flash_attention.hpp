// Flash attention on the device, the contract of exec/cpu/ops/flash_attention.hpp:
// the same AttentionShape (causal or not, A query heads sharing G kv heads)
// and packed qkv [b, S, (A+2G)d], out [b, S, A d], and in place of P only the
// log-sum-exp of each query row's scaled (and masked) scores, lse [b, A, S];
// the backward rebuilds P = exp(score - lse) from q, k and lse.
//
// What it is: a plain tiled kernel in fp32, written to be checked against the
// CPU, not to be fast. Forward and dq: one block per (sample, query head, 8
// query rows), a warp per query row; keys are staged 32 at a time in shared
// memory, lane j scoring key j (a dot product over d), the row's running max
// and sum updated once per tile (online softmax) and P v accumulated in
// registers (head column lane + 32c in register c). dk and dv: one block per
// (sample, kv head, 8 key rows), a warp per key row, queries staged 32 at a
// time, the group's query heads summed in order; no atomics, so every
// gradient is deterministic. The backward computes q k^T twice (once for dq,
// once for dk and dv), and a row's scores are dot products, not tensor-core
// GEMMs: it is NOT FlashAttention-2's speed. d is at most kFlashMaxHeadDim.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

using cpu::AttentionShape;

inline constexpr int kFlashRows = kRowsPerBlock;  // query (or key) rows per block: a warp each
inline constexpr int kFlashTile = kWarp;          // rows staged per tile: a lane each
inline constexpr std::int64_t kFlashMaxHeadDim = 256;  // 8 registers of a row per lane

// attention's check_attention_shape, and d <= kFlashMaxHeadDim and a grid
// that fits; std::invalid_argument otherwise.
void check_flash_shape(const AttentionShape& shape);

// Registers per lane for a row of d: d / 32 rounded up to 1, 2, 4 or 8 (one
// kernel is compiled for each).
[[nodiscard]] int flash_chunks(std::int64_t head_dim);

// Blocks of the forward and of dq: b * A * ceil(S / 8); of dk and dv: b * G * ceil(S / 8).
[[nodiscard]] std::int64_t flash_query_blocks(const AttentionShape& shape);
[[nodiscard]] std::int64_t flash_key_blocks(const AttentionShape& shape);

// Dynamic shared memory per block, in bytes. Tiles are [32][d+1] (padded, so
// lane j reading row j hits its own bank), a warp's own rows [8][d]:
//   forward: k and v tiles and the q rows, (2*32*(d+1) + 8d) floats;
//   dq:      k and v tiles, the q and dout rows, (2*32*(d+1) + 16d) floats;
//   dk, dv:  q and dout tiles with their lse and D, the k and v rows,
//            (2*32*(d+1) + 64 + 16d) floats.
[[nodiscard]] std::size_t flash_forward_shared_bytes(std::int64_t head_dim);
[[nodiscard]] std::size_t flash_query_grad_shared_bytes(std::int64_t head_dim);
[[nodiscard]] std::size_t flash_key_grad_shared_bytes(std::int64_t head_dim);

// The backward's scratch: D_i = dout_i . out_i per query row, b A S floats.
[[nodiscard]] std::int64_t flash_attention_backward_scratch_floats(const AttentionShape& shape);

// out [b, S, A d] and lse [b, A, S], overwritten.
void flash_attention_forward(const AttentionShape& shape, const float* qkv, float* out, float* lse,
                             StreamHandle stream);

// From the forward's qkv, out and lse and dout [b, S, A d]: dqkv [b, S, (A+2G)d]
// overwritten with the gradients of q, k and v. scratch: device memory of
// flash_attention_backward_scratch_floats() floats.
void flash_attention_backward(const AttentionShape& shape, const float* qkv, const float* out,
                              const float* lse, const float* dout, float* dqkv, float* scratch,
                              StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
