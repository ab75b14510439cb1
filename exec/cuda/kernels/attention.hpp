// Naive self-attention on the device, the contract of exec/cpu/ops/attention.hpp
// (the same AttentionShape: causal or not, A query heads sharing G key/value
// heads; qkv [b, S, (A+2G)d], probs [b, A, S, S], zero above the diagonal when
// causal, out [b, S, A d]): the q/k/v columns are permuted to head-major
// (heads.hpp), k and v copied to every query head of their group, so each
// GEMM is one strided-batched fp32 call over the b*A (sample, query head)
// pairs; then permuted back, a group's k and v gradients summed. Scratch is
// device memory of at least the *_scratch_floats() size, owned by the caller.
#pragma once

#include <cstdint>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cuda/kernels/gemm.hpp"

namespace gpipe::exec::cuda::kernels {

using cpu::AttentionShape;

// Throws std::invalid_argument on a negative size, no heads, hidden % heads != 0,
// a negative kv_heads or one (other than 0, meaning A) that does not divide heads.
void check_attention_shape(const AttentionShape& shape);

// q, k, v (k and v copied per query head) and out in head-major layout: 4 b S H floats.
[[nodiscard]] std::int64_t attention_forward_scratch_floats(const AttentionShape& shape);
// q, k, v, dout, dq, dk, dv head-major (7 b S H) and dP (b A S S).
[[nodiscard]] std::int64_t attention_backward_scratch_floats(const AttentionShape& shape);

void attention_forward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                       float* probs, float* out, float* scratch, StreamHandle stream);

// dqkv [b, S, (A+2G)d] is overwritten with the gradients of q, k and v.
void attention_backward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
