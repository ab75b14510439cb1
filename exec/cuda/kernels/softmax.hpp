// The softmax of naive attention's score matrices on the device, forward and
// backward, causal or not (exec/cpu/ops/attention.cpp's softmax_rows): row i of
// each [S, S] matrix is the softmax of the entries it sees, its first i+1
// when causal (the entries above the diagonal exactly 0), all S when not.
// One warp per row, as llm.c's attention softmax. The head permutes around
// it are in heads.hpp.
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// Each of the `matrices` [S, S] score matrices, in place.
void attention_softmax_forward(std::int64_t matrices, std::int64_t seq, bool causal, float* scores,
                               StreamHandle stream);

// In place on dprobs: ds = p * (dp - sum_j p dp) per row, over the entries the
// row sees (masked p are 0, so the masked ds are 0 too).
void attention_softmax_backward(std::int64_t matrices, std::int64_t seq, bool causal,
                                const float* probs, float* dprobs, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
