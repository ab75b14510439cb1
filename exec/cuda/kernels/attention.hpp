// Causal multi-head self-attention on the device, the contract of
// exec/cpu/ops/attention.hpp (same qkv [b, S, 3H], probs [b, A, S, S] with zeros
// above the diagonal, out [b, S, H]): the q/k/v columns are permuted to
// head-major (softmax.hpp) so each GEMM is one strided-batched fp32 call over
// the b*A (sample, head) pairs, then permuted back. Scratch is device memory
// of at least the *_scratch_floats() size, owned by the caller.
#pragma once

#include <cstdint>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cuda/kernels/gemm.hpp"

namespace gpipe::exec::cuda::kernels {

using cpu::AttentionShape;

// Throws std::invalid_argument on a negative size, no heads or hidden % heads != 0.
void check_attention_shape(const AttentionShape& shape);

// q, k, v and out in head-major layout: 4 b S H floats.
[[nodiscard]] std::int64_t attention_forward_scratch_floats(const AttentionShape& shape);
// q, k, v, dout, dq, dk, dv head-major (7 b S H) and dP (b A S S).
[[nodiscard]] std::int64_t attention_backward_scratch_floats(const AttentionShape& shape);

void attention_forward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                       float* probs, float* out, float* scratch, StreamHandle stream);

// dqkv [b, S, 3H] is overwritten with the gradients of q, k and v.
void attention_backward(BlasHandle& blas, const AttentionShape& shape, const float* qkv,
                        const float* probs, const float* dout, float* dqkv, float* scratch,
                        StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
