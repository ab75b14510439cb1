// Causal attention over a context-parallel group, Llama 3's all-gather form
// (models/context_parallel.hpp): the sequence of S tokens is cut in 2C
// chunks of S / 2C, and member i of C holds chunks i and 2C - 1 - i (so each
// member's queries see as many keys: both sources' load balancing), its
// S / C tokens in that order. Before attention the members all-gather every
// chunk's keys and values; each computes its own queries against them; in
// the backward they gather them again (they are temporaries, not kept, as
// gpipe's model prices it) and reduce-scatter the gradients of the keys and
// values, each member summing what every query gave its own tokens'.
//
// Operands are a block's packed qkv [b, S / C, (A + 2G) d] (q, k and v of
// each of the member's tokens, after the rotary embedding), the output
// [b, S / C, A d] and the log-sum-exp [b, A, S / C], as the flash kernel
// keeps them (exec/cpu/ops/flash_attention.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/cpu/ops/attention.hpp"

namespace gpipe::exec::cpu {

class ContextAttention {
 public:
  // `local`: one member's shape (seq S / C, its heads); `seq`: the whole S.
  ContextAttention(const AttentionShape& local, std::int64_t seq, ContextParallelComm& group);

  [[nodiscard]] const std::int64_t* positions() const { return positions_.data(); }

  void forward(std::int64_t batch, const float* qkv, float* out, float* lse) const;
  // dqkv [b, S / C, (A + 2G) d]: q's gradients from this member's queries,
  // k's and v's summed over every member's.
  void backward(std::int64_t batch, const float* qkv, const float* out, const float* lse, const float* dout,
                float* dqkv) const;

 private:
  // The whole sequence's keys and values [b, S, 2G d] (k, then v), in
  // sequence order, from every member's qkv.
  [[nodiscard]] std::vector<float> gather_keys_values(std::int64_t batch, const float* qkv) const;

  AttentionShape local_;
  std::int64_t seq_;
  ContextParallelComm& group_;
  std::vector<std::int64_t> positions_;
};

}  // namespace gpipe::exec::cpu
