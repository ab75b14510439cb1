// The permutes of naive attention on the device, between the token-major
// layouts of exec/cpu/ops/attention.hpp (qkv [b, S, (A+2G)d], out [b, S, A d])
// and the head-major layout [b, A, S, d] in which every (sample, head) matrix
// is contiguous, so that each GEMM of attention.cpp is one strided-batched
// call over the b*A (sample, query head) pairs.
//
// Grouped-query heads: split_qkv copies kv head g to each of the A/G query
// heads that read it (k and v become [b, A, S, d] like q), and
// merge_qkv_gradients sums those copies' gradients back into kv head g, in
// head order, as the CPU kernel does. With G = A both are plain permutes.
#pragma once

#include <cstdint>

#include "exec/cpu/ops/attention.hpp"
#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

struct HeadLayout {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t parts = 1;  // consecutive blocks of heads*head_dim columns in a row (1 for out)
};

// rows [b, S, parts*H] -> heads [parts][b, A, S, d] (overwritten).
void split_heads(const HeadLayout& layout, const float* rows, float* heads, StreamHandle stream);
// heads [parts][b, A, S, d] -> rows [b, S, parts*H] (overwritten).
void merge_heads(const HeadLayout& layout, const float* heads, float* rows, StreamHandle stream);

// qkv [b, S, (A+2G)d] -> q, k, v [b, A, S, d] each (overwritten); k and v of
// query head a are kv head a / (A/G)'s.
void split_qkv(const cpu::AttentionShape& shape, const float* qkv, float* q, float* k, float* v,
               StreamHandle stream);

// dq, dk, dv [b, A, S, d] -> dqkv [b, S, (A+2G)d] (overwritten): kv head g's
// gradient is the sum of its query heads' dk (dv), first head first.
void merge_qkv_gradients(const cpu::AttentionShape& shape, const float* dq, const float* dk,
                         const float* dv, float* dqkv, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
