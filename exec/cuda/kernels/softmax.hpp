// The pieces of causal attention that are not GEMMs, on the device: the
// causal softmax of the score matrices and its backward, and the permutes
// between the token-major layout of exec/cpu/ops/attention.hpp ([b, S, parts*H],
// head a owning columns [a d, (a+1) d) of each part) and the head-major
// layout [parts][b, A, S, d] in which every (sample, head) matrix is
// contiguous, so the GEMMs become one strided-batched call each.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// Each of the `matrices` [S, S] score matrices, in place: row i becomes the
// softmax of its first i+1 entries, the entries above the diagonal exactly 0.
void causal_softmax_forward(std::int64_t matrices, std::int64_t seq, float* scores, StreamHandle stream);

// In place on dprobs: ds = p * (dp - sum_j p dp) per row (masked p are 0, so
// the masked ds are 0 too).
void causal_softmax_backward(std::int64_t matrices, std::int64_t seq, const float* probs,
                             float* dprobs, StreamHandle stream);

struct HeadLayout {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t parts = 1;  // 3 for qkv, 1 for out
};

// rows [b, S, parts*H] -> heads [parts][b, A, S, d] (overwritten).
void split_heads(const HeadLayout& layout, const float* rows, float* heads, StreamHandle stream);
// heads [parts][b, A, S, d] -> rows [b, S, parts*H] (overwritten).
void merge_heads(const HeadLayout& layout, const float* heads, float* rows, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
