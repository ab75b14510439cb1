#include "exec/cpu/context_attention.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "exec/cpu/ops/flash_attention.hpp"
#include "models/context_parallel.hpp"

namespace gpipe::exec::cpu {

ContextAttention::ContextAttention(const AttentionShape& local, std::int64_t seq, ContextParallelComm& group)
    : local_(local), seq_(seq), group_(group), positions_(models::context_positions(seq, group.size(), group.rank())) {
  if (seq % (2 * group.size()) != 0 || local.seq * group.size() != seq || !local.causal) {
    throw std::logic_error(fmt::format("context attention: {} tokens of {} in a group of {}, causal {}", local.seq,
                                       seq, group.size(), local.causal));
  }
}

namespace {

// Member m's token t (of S / C) is the sequence's token positions(m)[t]:
// copies rows between a member-major [C][b][S / C][w] and [b][S][w].
template <typename Copy>
void for_each_row(std::int64_t batch, std::int64_t seq, int members, Copy copy) {
  const std::int64_t local = seq / members;
  for (int m = 0; m < members; ++m) {
    const std::vector<std::int64_t> at = models::context_positions(seq, members, m);
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t t = 0; t < local; ++t) copy((m * batch + n) * local + t, n * seq + at[static_cast<std::size_t>(t)]);
    }
  }
}

}  // namespace

std::vector<float> ContextAttention::gather_keys_values(std::int64_t batch, const float* qkv) const {
  const std::int64_t d = local_.head_dim();
  const std::int64_t kv = 2 * local_.kv_groups() * d;
  const std::int64_t w = local_.qkv_width();
  const std::int64_t q = local_.heads * d;
  std::vector<float> mine(static_cast<std::size_t>(batch * local_.seq * kv));
  for (std::int64_t r = 0; r < batch * local_.seq; ++r) {
    std::copy(qkv + r * w + q, qkv + r * w + q + kv, mine.begin() + r * kv);
  }
  std::vector<float> gathered(mine.size() * static_cast<std::size_t>(group_.size()));
  group_.all_gather(mine, gathered);
  std::vector<float> whole(gathered.size());
  for_each_row(batch, seq_, group_.size(), [&](std::int64_t from, std::int64_t to) {
    std::copy(gathered.begin() + from * kv, gathered.begin() + (from + 1) * kv, whole.begin() + to * kv);
  });
  return whole;
}

void ContextAttention::forward(std::int64_t batch, const float* qkv, float* out, float* lse) const {
  const std::vector<float> keys = gather_keys_values(batch, qkv);
  const std::int64_t g = local_.kv_groups() * local_.head_dim();
  AttentionShape shape = local_;
  shape.batch = batch;
  const std::int64_t w = local_.qkv_width();
  flash_attention_forward(shape,
                          {.q = qkv, .k = keys.data(), .v = keys.data() + g, .q_row = w, .q_sample = local_.seq * w,
                           .kv_row = 2 * g, .kv_sample = seq_ * 2 * g, .keys = seq_, .positions = positions()},
                          out, lse);
}

void ContextAttention::backward(std::int64_t batch, const float* qkv, const float* out, const float* lse,
                                const float* dout, float* dqkv) const {
  const std::vector<float> keys = gather_keys_values(batch, qkv);
  const std::int64_t g = local_.kv_groups() * local_.head_dim();
  const std::int64_t kv = 2 * g;
  AttentionShape shape = local_;
  shape.batch = batch;
  const std::int64_t w = local_.qkv_width();
  std::vector<float> dkeys(keys.size());
  flash_attention_backward(shape,
                           {.q = qkv, .k = keys.data(), .v = keys.data() + g, .q_row = w, .q_sample = local_.seq * w,
                            .kv_row = kv, .kv_sample = seq_ * kv, .keys = seq_, .positions = positions()},
                           out, lse, dout, {.dq = dqkv, .dk = dkeys.data(), .dv = dkeys.data() + g});
  // Every member's gradients of every token's keys and values, member-major
  // by owner, summed over the group into this member's own.
  std::vector<float> by_owner(dkeys.size());
  for_each_row(batch, seq_, group_.size(), [&](std::int64_t to, std::int64_t from) {
    std::copy(dkeys.begin() + from * kv, dkeys.begin() + (from + 1) * kv, by_owner.begin() + to * kv);
  });
  std::vector<float> mine(by_owner.size() / static_cast<std::size_t>(group_.size()));
  group_.reduce_scatter_sum(by_owner, mine);
  const std::int64_t q = local_.heads * local_.head_dim();
  for (std::int64_t r = 0; r < batch * local_.seq; ++r) {
    std::copy(mine.begin() + r * kv, mine.begin() + (r + 1) * kv, dqkv + r * w + q);
  }
}

}  // namespace gpipe::exec::cpu
