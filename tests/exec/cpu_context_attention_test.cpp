// Context parallelism on the CPU: the flash kernel's queries at their places
// against gathered keys (exec/cpu/ops/flash_attention.hpp's FlashOperands),
// ContextAttention over a group of threads (exec/cpu/context_attention.hpp),
// and a llama block split over such a group (make_context_layer), each
// against the whole sequence computed at once. Stated tolerances, fp32,
// values of order 1: outputs and lse within 2e-5 of the whole's; gradients
// within 1e-4 of the largest |whole's| (the members' key and value gradients
// are sums over members, in another order than the whole's).
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "exec/cpu/context_attention.hpp"
#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/flash_attention.hpp"
#include "models/context_parallel.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec::cpu {
namespace {

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

float max_abs(std::span<const float> v) {
  float m = 0;
  for (const float x : v) m = std::max(m, std::abs(x));
  return m;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Rows `at` of each sample of [b, S, width] values: [b, at.size(), width].
std::vector<float> rows_at(const std::vector<float>& whole, std::int64_t b, std::int64_t seq, std::int64_t width,
                           const std::vector<std::int64_t>& at) {
  std::vector<float> out;
  for (std::int64_t n = 0; n < b; ++n) {
    for (const std::int64_t t : at) {
      const auto from = whole.begin() + (n * seq + t) * width;
      out.insert(out.end(), from, from + width);
    }
  }
  return out;
}

// lse [b, A, S] at the positions: [b, A, at.size()].
std::vector<float> lse_at(const std::vector<float>& whole, std::int64_t pairs, std::int64_t seq,
                          const std::vector<std::int64_t>& at) {
  std::vector<float> out;
  for (std::int64_t p = 0; p < pairs; ++p) {
    for (const std::int64_t t : at) out.push_back(whole[static_cast<std::size_t>(p * seq + t)]);
  }
  return out;
}

// Every weight times `factor`: the initial 0.02 scale makes attention nearly
// uniform, where the keys' places barely matter; larger weights make it peaked.
void scale_weights(Layer& layer, float factor) {
  for (auto& p : layer.parameters()) {
    for (float& v : p.value.f32()) v *= factor;
  }
}

// C members as threads: all_gather and reduce_scatter_sum through shared
// buffers, each call a phase between barriers.
class ThreadGroup {
 public:
  explicit ThreadGroup(int members) : members_(members), barrier_(members), slots_(static_cast<std::size_t>(members)) {}

  class Member final : public ContextParallelComm {
   public:
    Member(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
    [[nodiscard]] int size() const override { return group_.members_; }
    [[nodiscard]] int rank() const override { return rank_; }
    void all_gather(std::span<const float> mine, std::span<float> all) override {
      group_.slots_[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
      group_.barrier_.arrive_and_wait();
      for (int m = 0; m < size(); ++m) {
        const auto& from = group_.slots_[static_cast<std::size_t>(m)];
        std::copy(from.begin(), from.end(), all.begin() + static_cast<std::ptrdiff_t>(m * mine.size()));
      }
      group_.barrier_.arrive_and_wait();
    }
    void reduce_scatter_sum(std::span<const float> all, std::span<float> mine) override {
      group_.slots_[static_cast<std::size_t>(rank_)].assign(all.begin(), all.end());
      group_.barrier_.arrive_and_wait();
      std::fill(mine.begin(), mine.end(), 0.0F);
      for (int m = 0; m < size(); ++m) {
        const auto& from = group_.slots_[static_cast<std::size_t>(m)];
        for (std::size_t i = 0; i < mine.size(); ++i) mine[i] += from[rank_ * mine.size() + i];
      }
      group_.barrier_.arrive_and_wait();
    }

   private:
    ThreadGroup& group_;
    int rank_;
  };

  // Runs f(member comm, member index) on a thread per member.
  template <class F>
  void run(F f) {
    std::vector<std::thread> threads;
    for (int m = 0; m < members_; ++m) {
      threads.emplace_back([this, m, &f] {
        Member comm(*this, m);
        f(comm, m);
      });
    }
    for (auto& t : threads) t.join();
  }

 private:
  int members_;
  std::barrier<> barrier_;
  std::vector<std::vector<float>> slots_;
};

TEST(CpuContextPositions, ChunksIAnd2CMinus1MinusI) {
  EXPECT_EQ(models::context_positions(8, 2, 0), (std::vector<std::int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(models::context_positions(8, 2, 1), (std::vector<std::int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(models::context_positions(12, 3, 1), (std::vector<std::int64_t>{2, 3, 8, 9}));
  // Every token once over the group.
  std::vector<std::int64_t> all;
  for (int m = 0; m < 4; ++m) {
    const auto at = models::context_positions(40, 4, m);
    all.insert(all.end(), at.begin(), at.end());
  }
  std::sort(all.begin(), all.end());
  for (std::int64_t t = 0; t < 40; ++t) EXPECT_EQ(all[static_cast<std::size_t>(t)], t);
}

// A member's queries at their places against the whole sequence's keys give
// the whole's rows; the members' key and value gradients sum to the whole's.
TEST(CpuContextAttention, PlacedQueriesMatchTheWholeSequence) {
  // c = S / 2C: 50 and 34 rows a chunk, so tiles straddle the two chunks.
  for (const auto& [seq, members] : {std::pair<std::int64_t, int>{200, 2}, {204, 3}}) {
    const AttentionShape whole{.batch = 2, .seq = seq, .hidden = 32, .heads = 4, .kv_heads = 2, .causal = true};
    const std::int64_t w = whole.qkv_width(), d = whole.head_dim(), g = whole.kv_groups() * d, q = whole.heads * d;
    const std::int64_t b = whole.batch;
    const std::vector<float> qkv = random_values(static_cast<std::size_t>(b * seq * w), 3);
    const std::vector<float> dout = random_values(static_cast<std::size_t>(b * seq * whole.hidden), 4);
    std::vector<float> out(static_cast<std::size_t>(b * seq * whole.hidden)), lse(static_cast<std::size_t>(b * whole.heads * seq));
    std::vector<float> dqkv(qkv.size());
    flash_attention_forward(whole, qkv.data(), out.data(), lse.data());
    flash_attention_backward(whole, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
    // The keys and values [b, S, 2g] as the group gathers them.
    std::vector<float> keys;
    for (std::int64_t r = 0; r < b * seq; ++r) keys.insert(keys.end(), qkv.begin() + r * w + q, qkv.begin() + r * w + w);
    std::vector<float> dkeys_sum(keys.size(), 0.0F);
    for (int m = 0; m < members; ++m) {
      const std::vector<std::int64_t> at = models::context_positions(seq, members, m);
      const auto rows = static_cast<std::int64_t>(at.size());
      AttentionShape local = whole;
      local.seq = rows;
      const std::vector<float> local_qkv = rows_at(qkv, b, seq, w, at);
      const FlashOperands in{.q = local_qkv.data(), .k = keys.data(), .v = keys.data() + g, .q_row = w,
                             .q_sample = rows * w, .kv_row = 2 * g, .kv_sample = seq * 2 * g, .keys = seq,
                             .positions = at.data()};
      std::vector<float> local_out(static_cast<std::size_t>(b * rows * whole.hidden));
      std::vector<float> local_lse(static_cast<std::size_t>(b * whole.heads * rows));
      flash_attention_forward(local, in, local_out.data(), local_lse.data());
      EXPECT_LE(max_abs_diff(local_out, rows_at(out, b, seq, whole.hidden, at)), 2e-5) << "member " << m;
      EXPECT_LE(max_abs_diff(local_lse, lse_at(lse, b * whole.heads, seq, at)), 2e-5) << "member " << m;
      // Gradients: NaN-filled first, so that an element the kernel should
      // write and does not shows.
      std::vector<float> local_dqkv(local_qkv.size(), NAN);
      std::vector<float> dkeys(keys.size(), NAN);
      const std::vector<float> local_dout = rows_at(dout, b, seq, whole.hidden, at);
      flash_attention_backward(local, in, local_out.data(), local_lse.data(), local_dout.data(),
                               {.dq = local_dqkv.data(), .dk = dkeys.data(), .dv = dkeys.data() + g});
      const std::vector<float> whole_dq = rows_at(dqkv, b, seq, w, at);
      float dq_diff = 0;
      for (std::int64_t r = 0; r < b * rows; ++r) {
        for (std::int64_t c = 0; c < q; ++c) {
          const auto i = static_cast<std::size_t>(r * w + c);
          dq_diff = std::max(dq_diff, std::isnan(local_dqkv[i]) ? INFINITY : std::abs(local_dqkv[i] - whole_dq[i]));
        }
      }
      EXPECT_LE(dq_diff, 1e-4 * max_abs(dqkv)) << "member " << m;
      for (std::size_t i = 0; i < dkeys.size(); ++i) dkeys_sum[i] += dkeys[i];
    }
    std::vector<float> whole_dkeys;
    for (std::int64_t r = 0; r < b * seq; ++r) whole_dkeys.insert(whole_dkeys.end(), dqkv.begin() + r * w + q, dqkv.begin() + r * w + w);
    EXPECT_LE(max_abs_diff(dkeys_sum, whole_dkeys), 1e-4 * max_abs(dqkv)) << "S " << seq << " C " << members;
  }
}

// ContextAttention's gathers and reduce-scatter over a group of threads.
TEST(CpuContextAttention, TheGroupComputesTheWholeSequence) {
  const std::int64_t seq = 96;
  const int members = 2;
  const AttentionShape whole{.batch = 2, .seq = seq, .hidden = 16, .heads = 2, .kv_heads = 1, .causal = true};
  const std::int64_t w = whole.qkv_width(), b = whole.batch;
  const std::vector<float> qkv = random_values(static_cast<std::size_t>(b * seq * w), 5);
  const std::vector<float> dout = random_values(static_cast<std::size_t>(b * seq * whole.hidden), 6);
  std::vector<float> out(static_cast<std::size_t>(b * seq * whole.hidden)), lse(static_cast<std::size_t>(b * whole.heads * seq));
  std::vector<float> dqkv(qkv.size());
  flash_attention_forward(whole, qkv.data(), out.data(), lse.data());
  flash_attention_backward(whole, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
  std::vector<std::vector<float>> outs(members), dqkvs(members);
  ThreadGroup group(members);
  group.run([&](ContextParallelComm& comm, int m) {
    const std::vector<std::int64_t> at = models::context_positions(seq, members, m);
    const auto rows = static_cast<std::int64_t>(at.size());
    AttentionShape local = whole;
    local.seq = rows;
    const ContextAttention attention(local, seq, comm);
    const std::vector<float> mine = rows_at(qkv, b, seq, w, at);
    std::vector<float> o(static_cast<std::size_t>(b * rows * whole.hidden));
    std::vector<float> l(static_cast<std::size_t>(b * whole.heads * rows));
    attention.forward(b, mine.data(), o.data(), l.data());
    std::vector<float> dq(mine.size(), NAN);
    attention.backward(b, mine.data(), o.data(), l.data(), rows_at(dout, b, seq, whole.hidden, at).data(), dq.data());
    outs[static_cast<std::size_t>(m)] = std::move(o);
    dqkvs[static_cast<std::size_t>(m)] = std::move(dq);
  });
  for (int m = 0; m < members; ++m) {
    const std::vector<std::int64_t> at = models::context_positions(seq, members, m);
    EXPECT_LE(max_abs_diff(outs[static_cast<std::size_t>(m)], rows_at(out, b, seq, whole.hidden, at)), 2e-5);
    EXPECT_LE(max_abs_diff(dqkvs[static_cast<std::size_t>(m)], rows_at(dqkv, b, seq, w, at)), 1e-4 * max_abs(dqkv));
  }
}

// A llama block split over two members: each member's outputs and input
// gradients are the whole block's rows, and the members' weight gradients
// sum to the whole's (outputs within 2e-5 of the largest |output|).
TEST(CpuContextLayer, ALlamaBlockSplitOverTheGroupIsTheWholeBlock) {
  constexpr float kWeightScale = 5;
  const models::Model model = models::parse_model("llama:layers=1,hidden=16,heads=4,kv_heads=2,ffn=24,seq=16,vocab=32");
  const int members = 2;
  const models::Model split = models::split_context_parallel(model, {.degree = members});
  const int block = 1;  // after the token embedding
  ASSERT_EQ(model.layers.at(block).kind, models::layer_kind::llama_block);
  const std::int64_t b = 2, s = model.seq, h = model.hidden;
  const std::vector<float> x = random_values(static_cast<std::size_t>(b * s * h), 7);
  const std::vector<float> dy = random_values(static_cast<std::size_t>(b * s * h), 8);
  const std::unique_ptr<Layer> whole = make_layer(model, block, 11);
  scale_weights(*whole, kWeightScale);
  Stash stash;
  Tensor input({b, s, h});
  std::copy(x.begin(), x.end(), input.f32().begin());
  const Tensor y = whole->forward(std::move(input), nullptr, stash, nullptr);
  Tensor grad_y({b, s, h});
  std::copy(dy.begin(), dy.end(), grad_y.f32().begin());
  const Tensor dx = whole->backward(std::move(stash), grad_y);
  const std::vector<float> y_whole(y.f32().begin(), y.f32().end());
  const float y_scale = std::max(1.0F, max_abs(y_whole));
  const std::vector<float> dx_whole(dx.f32().begin(), dx.f32().end());

  std::vector<std::vector<float>> ys(members), dxs(members);
  std::vector<std::vector<std::vector<float>>> grads(members);
  ThreadGroup group(members);
  group.run([&](ContextParallelComm& comm, int m) {
    const std::vector<std::int64_t> at = models::context_positions(s, members, m);
    const auto rows = static_cast<std::int64_t>(at.size());
    const std::unique_ptr<Layer> part = make_context_layer(split, block, 11, comm);
    scale_weights(*part, kWeightScale);
    Stash mine;
    Tensor in({b, rows, h});
    const std::vector<float> xs = rows_at(x, b, s, h, at);
    std::copy(xs.begin(), xs.end(), in.f32().begin());
    const Tensor out = part->forward(std::move(in), nullptr, mine, nullptr);
    Tensor g({b, rows, h});
    const std::vector<float> gs = rows_at(dy, b, s, h, at);
    std::copy(gs.begin(), gs.end(), g.f32().begin());
    const Tensor dxm = part->backward(std::move(mine), g);
    ys[static_cast<std::size_t>(m)].assign(out.f32().begin(), out.f32().end());
    dxs[static_cast<std::size_t>(m)].assign(dxm.f32().begin(), dxm.f32().end());
    for (const auto& p : part->parameters()) grads[static_cast<std::size_t>(m)].emplace_back(p.grad.f32().begin(), p.grad.f32().end());
  });
  for (int m = 0; m < members; ++m) {
    const std::vector<std::int64_t> at = models::context_positions(s, members, m);
    EXPECT_LE(max_abs_diff(ys[static_cast<std::size_t>(m)], rows_at(y_whole, b, s, h, at)), 2e-5 * y_scale)
        << "member " << m;
    EXPECT_LE(max_abs_diff(dxs[static_cast<std::size_t>(m)], rows_at(dx_whole, b, s, h, at)), 1e-4 * max_abs(dx_whole))
        << "member " << m;
  }
  const auto& params = whole->parameters();
  ASSERT_EQ(grads[0].size(), params.size());
  for (std::size_t p = 0; p < params.size(); ++p) {
    const std::vector<float> want(params[p].grad.f32().begin(), params[p].grad.f32().end());
    std::vector<float> sum(want.size(), 0.0F);
    for (int m = 0; m < members; ++m) {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += grads[static_cast<std::size_t>(m)][p][i];
    }
    EXPECT_LE(max_abs_diff(sum, want), 1e-4 * std::max(1.0F, max_abs(want))) << params[p].name;
  }
}

TEST(CpuContextLayer, RefusesALayerItDoesNotSplit) {
  const models::Model model = models::split_context_parallel(
      models::parse_model("transformer:layers=1,hidden=16,heads=2,seq=8,vocab=32,attn=flash"), {.degree = 2});
  ThreadGroup group(1);
  group.run([&](ContextParallelComm& comm, int) {
    EXPECT_THROW((void)make_context_layer(model, 1, 1, comm), InputError);
  });
}

}  // namespace
}  // namespace gpipe::exec::cpu
