// Flash attention on the CPU (exec/cpu/ops/flash_attention.hpp) against the
// naive kernel (attention.hpp) and a double-precision reference written here:
// causal and not, multi-head and grouped-query, sequences that are and are not
// whole tiles. Stated tolerances, fp32, values of order 1:
//   outputs: |flash - reference| <= 2e-5 (the naive kernel's own error is alike);
//   lse: |flash - log(reference's softmax denominator)| <= 2e-5;
//   gradients: max |flash - reference| <= 1e-4 of the largest |reference|.
// And what must hold exactly: causality, the same bits whatever the team, and
// a NaN input reaching the outputs and gradients it must.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/flash_attention.hpp"

namespace gpipe::exec::cpu {
namespace {

std::vector<float> random_values(std::size_t count, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0F, scale);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

std::string label(const AttentionShape& s) {
  return fmt::format("b={} S={} A={} G={} d={} {}", s.batch, s.seq, s.heads, s.kv_groups(), s.head_dim(),
                     s.causal ? "causal" : "full");
}

std::size_t qkv_size(const AttentionShape& s) { return static_cast<std::size_t>(s.batch * s.seq * s.qkv_width()); }
std::size_t out_size(const AttentionShape& s) { return static_cast<std::size_t>(s.batch * s.seq * s.hidden); }

// The reference, in double: out, the softmax denominators' logs, and the
// gradients of q, k, v for the output gradient dout.
struct Reference {
  std::vector<double> out, lse, dqkv;
};

Reference reference(const AttentionShape& s, const std::vector<float>& qkv, const std::vector<float>& dout) {
  const std::int64_t d = s.head_dim(), w = s.qkv_width(), kb = s.heads * d, vb = kb + s.kv_groups() * d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  Reference r{std::vector<double>(out_size(s)), std::vector<double>(static_cast<std::size_t>(s.batch * s.heads * s.seq)),
              std::vector<double>(qkv_size(s))};
  for (std::int64_t n = 0; n < s.batch; ++n) {
    for (std::int64_t a = 0; a < s.heads; ++a) {
      const std::int64_t g = a / s.group_size();
      auto q = [&](std::int64_t i, std::int64_t c) { return double(qkv[std::size_t((n * s.seq + i) * w + a * d + c)]); };
      auto k = [&](std::int64_t j, std::int64_t c) { return double(qkv[std::size_t((n * s.seq + j) * w + kb + g * d + c)]); };
      auto v = [&](std::int64_t j, std::int64_t c) { return double(qkv[std::size_t((n * s.seq + j) * w + vb + g * d + c)]); };
      for (std::int64_t i = 0; i < s.seq; ++i) {
        const std::int64_t seen = s.causal ? i + 1 : s.seq;
        std::vector<double> p(static_cast<std::size_t>(seen));
        double max = -INFINITY;
        for (std::int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) dot += q(i, c) * k(j, c);
          p[std::size_t(j)] = dot * scale;
          max = std::max(max, p[std::size_t(j)]);
        }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - max));
        for (double& x : p) x /= sum;
        r.lse[std::size_t((n * s.heads + a) * s.seq + i)] = max + std::log(sum);
        // out = P v; dP = dout v^T; dS = P (dP - sum P dP); dq = scale dS k; dk += scale dS^T q; dv += P^T dout.
        std::vector<double> dp(p.size());
        double pdp = 0;
        for (std::int64_t c = 0; c < d; ++c) {
          double o = 0;
          for (std::int64_t j = 0; j < seen; ++j) o += p[std::size_t(j)] * v(j, c);
          r.out[std::size_t((n * s.seq + i) * s.hidden + a * d + c)] = o;
        }
        auto dout_at = [&](std::int64_t c) { return double(dout[std::size_t((n * s.seq + i) * s.hidden + a * d + c)]); };
        for (std::int64_t j = 0; j < seen; ++j) {
          double x = 0;
          for (std::int64_t c = 0; c < d; ++c) x += dout_at(c) * v(j, c);
          dp[std::size_t(j)] = x;
          pdp += p[std::size_t(j)] * x;
        }
        for (std::int64_t j = 0; j < seen; ++j) {
          const double ds = p[std::size_t(j)] * (dp[std::size_t(j)] - pdp) * scale;
          for (std::int64_t c = 0; c < d; ++c) {
            r.dqkv[std::size_t((n * s.seq + i) * w + a * d + c)] += ds * k(j, c);
            r.dqkv[std::size_t((n * s.seq + j) * w + kb + g * d + c)] += ds * q(i, c);
            r.dqkv[std::size_t((n * s.seq + j) * w + vb + g * d + c)] += p[std::size_t(j)] * dout_at(c);
          }
        }
      }
    }
  }
  return r;
}

// Infinite when any element differs by NaN: std::max would drop a NaN, and a
// kernel that leaves an element unwritten or NaN would pass.
template <class T>
double max_abs_diff(const std::vector<float>& a, const std::vector<T>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::abs(double(a[i]) - double(b[i]));
    if (std::isnan(diff)) return INFINITY;
    m = std::max(m, diff);
  }
  return m;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::abs(x));
  return m;
}

std::vector<AttentionShape> shapes() {
  std::vector<AttentionShape> out;
  for (const bool causal : {true, false}) {
    // seq 5: under one tile; 67: one whole tile and 3 rows; 130: two and 2.
    for (const std::int64_t seq : {5, 67, 130}) {
      out.push_back({.batch = 2, .seq = seq, .hidden = 16, .heads = 4, .kv_heads = 4, .causal = causal});
      out.push_back({.batch = 2, .seq = seq, .hidden = 16, .heads = 4, .kv_heads = 2, .causal = causal});
      out.push_back({.batch = 2, .seq = seq, .hidden = 16, .heads = 4, .kv_heads = 1, .causal = causal});
    }
    // A real head width (d 64: GEMMs past OpenBLAS's smallest kernels), grouped.
    out.push_back({.batch = 2, .seq = 67, .hidden = 256, .heads = 4, .kv_heads = 2, .causal = causal});
  }
  return out;
}

TEST(CpuFlashAttention, ForwardAndBackwardMatchTheReferenceAndTheNaiveKernel) {
  for (const AttentionShape& s : shapes()) {
    SCOPED_TRACE(label(s));
    const std::vector<float> qkv = random_values(qkv_size(s), 1, 1.0F);
    const std::vector<float> dout = random_values(out_size(s), 2, 1.0F);
    const Reference ref = reference(s, qkv, dout);

    // Outputs start as NaN: each kernel must write them whole (dqkv is
    // overwritten, not added to), or max_abs_diff comes out infinite.
    std::vector<float> out(out_size(s), NAN), lse(ref.lse.size(), NAN), dqkv(qkv_size(s), NAN);
    flash_attention_forward(s, qkv.data(), out.data(), lse.data());
    flash_attention_backward(s, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
    EXPECT_LE(max_abs_diff(out, ref.out), 2e-5);
    EXPECT_LE(max_abs_diff(lse, ref.lse), 2e-5);
    EXPECT_LE(max_abs_diff(dqkv, ref.dqkv), 1e-4 * max_abs(ref.dqkv));

    std::vector<float> naive_out(out_size(s), NAN), probs(std::size_t(s.batch * s.heads * s.seq * s.seq), NAN);
    std::vector<float> naive_dqkv(qkv_size(s), NAN);
    attention_forward(s, qkv.data(), probs.data(), naive_out.data());
    attention_backward(s, qkv.data(), probs.data(), dout.data(), naive_dqkv.data());
    EXPECT_LE(max_abs_diff(naive_out, ref.out), 2e-5);
    EXPECT_LE(max_abs_diff(naive_dqkv, ref.dqkv), 1e-4 * max_abs(ref.dqkv));
    // And the two fp32 kernels side by side, within both their errors.
    EXPECT_LE(max_abs_diff(out, naive_out), 4e-5);
    EXPECT_LE(max_abs_diff(dqkv, naive_dqkv), 2e-4 * max_abs(ref.dqkv));
  }
}

TEST(CpuFlashAttention, LargeScoresStayFinite) {
  // Scores of order 100: a softmax without its running maximum overflows e^x.
  const AttentionShape s{.batch = 1, .seq = 70, .hidden = 8, .heads = 2, .kv_heads = 1, .causal = true};
  const std::vector<float> qkv = random_values(qkv_size(s), 3, 8.0F);
  const std::vector<float> dout = random_values(out_size(s), 4, 1.0F);
  const Reference ref = reference(s, qkv, dout);
  std::vector<float> out(out_size(s)), lse(ref.lse.size()), dqkv(qkv_size(s));
  flash_attention_forward(s, qkv.data(), out.data(), lse.data());
  flash_attention_backward(s, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
  EXPECT_GT(max_abs(ref.lse), 50.0);
  EXPECT_LE(max_abs_diff(out, ref.out), 1e-4 * max_abs(ref.out));
  EXPECT_LE(max_abs_diff(dqkv, ref.dqkv), 1e-3 * max_abs(ref.dqkv));
}

// A diverging run must still fail --check-finite: a NaN in token 80's key
// makes the output of every query row that sees it NaN, and no other; and every
// gradient the naive kernel makes NaN is NaN here too (among them dv of the
// keys before 80, through the P of the rows after it). Where a masked zero
// meets the NaN (0 x NaN in a tile across the diagonal) depends on the tiles,
// so beyond that the gradients' NaNs are not compared.
TEST(CpuFlashAttention, ANaNReachesAtLeastWhatItReachesInTheNaiveKernel) {
  const AttentionShape s{.batch = 1, .seq = 100, .hidden = 16, .heads = 4, .kv_heads = 2, .causal = true};
  const std::int64_t at = 80;
  std::vector<float> qkv = random_values(qkv_size(s), 10, 1.0F);
  qkv[std::size_t(at * s.qkv_width() + s.hidden)] = NAN;  // kv head 0's key
  const std::vector<float> dout = random_values(out_size(s), 11, 1.0F);
  std::vector<float> out(out_size(s)), lse(std::size_t(s.heads * s.seq)), dqkv(qkv_size(s));
  flash_attention_forward(s, qkv.data(), out.data(), lse.data());
  flash_attention_backward(s, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
  std::vector<float> naive_out(out_size(s)), probs(std::size_t(s.heads * s.seq * s.seq));
  std::vector<float> naive_dqkv(qkv_size(s));
  attention_forward(s, qkv.data(), probs.data(), naive_out.data());
  attention_backward(s, qkv.data(), probs.data(), dout.data(), naive_dqkv.data());
  const std::int64_t d = s.head_dim();
  for (std::int64_t i = 0; i < s.seq; ++i) {
    for (std::int64_t a = 0; a < s.heads; ++a) {
      const bool sees = i >= at && a / s.group_size() == 0;
      EXPECT_EQ(std::isnan(out[std::size_t(i * s.hidden + a * d)]), sees) << "row " << i << " head " << a;
    }
  }
  const std::int64_t dv_of_key_0 = s.hidden + s.kv_groups() * d;  // kv head 0's v, token 0
  EXPECT_TRUE(std::isnan(dqkv[std::size_t(dv_of_key_0)]));
  std::int64_t naive_nans = 0, missed = 0;
  for (std::size_t i = 0; i < dqkv.size(); ++i) {
    naive_nans += std::isnan(naive_dqkv[i]) ? 1 : 0;
    missed += std::isnan(naive_dqkv[i]) && !std::isnan(dqkv[i]) ? 1 : 0;
  }
  EXPECT_GT(naive_nans, 0);
  EXPECT_EQ(missed, 0) << "of " << naive_nans << " gradients the naive kernel makes NaN";
}

TEST(CpuFlashAttention, ALaterTokenLeavesEarlierOutputsUnchanged) {
  const AttentionShape s{.batch = 1, .seq = 100, .hidden = 16, .heads = 4, .kv_heads = 2, .causal = true};
  const std::vector<float> qkv = random_values(qkv_size(s), 5, 1.0F);
  std::vector<float> changed = qkv;
  const std::int64_t at = 80;
  for (std::int64_t c = 0; c < s.qkv_width(); ++c) changed[std::size_t(at * s.qkv_width() + c)] += 1.0F;
  std::vector<float> out1(out_size(s)), out2(out_size(s)), lse1(std::size_t(s.heads * s.seq)), lse2(lse1.size());
  flash_attention_forward(s, qkv.data(), out1.data(), lse1.data());
  flash_attention_forward(s, changed.data(), out2.data(), lse2.data());
  for (std::int64_t i = 0; i < s.seq; ++i) {
    const auto row = [&](const std::vector<float>& o) {
      return std::vector<float>(o.begin() + i * s.hidden, o.begin() + (i + 1) * s.hidden);
    };
    EXPECT_EQ(row(out1) == row(out2), i < at) << "row " << i;
  }
}

// Both kernels, flash and naive: the naive backward's split by (sample, kv
// head) is new with grouped queries, so it is checked here too.
TEST(CpuFlashAttention, ATeamGivesTheSameBitsAsOneThread) {
  ComputeTeam pair(2);
  const AttentionShape grouped_causal{.batch = 2, .seq = 90, .hidden = 16, .heads = 4, .kv_heads = 2, .causal = true};
  const AttentionShape multi_head_full{.batch = 3, .seq = 70, .hidden = 16, .heads = 4, .kv_heads = 4, .causal = false};
  for (const AttentionShape& s : {grouped_causal, multi_head_full}) {
    SCOPED_TRACE(label(s));
    const std::vector<float> qkv = random_values(qkv_size(s), 6, 1.0F);
    const std::vector<float> dout = random_values(out_size(s), 7, 1.0F);
    auto run = [&](ComputeTeam* team) {
      const ComputeTeam::Scope scope(team);
      std::vector<float> out(out_size(s)), lse(std::size_t(s.batch * s.heads * s.seq)), dqkv(qkv_size(s));
      flash_attention_forward(s, qkv.data(), out.data(), lse.data());
      flash_attention_backward(s, qkv.data(), out.data(), lse.data(), dout.data(), dqkv.data());
      std::vector<float> naive_out(out_size(s)), probs(std::size_t(s.batch * s.heads * s.seq * s.seq)),
          naive_dqkv(qkv_size(s));
      attention_forward(s, qkv.data(), probs.data(), naive_out.data());
      attention_backward(s, qkv.data(), probs.data(), dout.data(), naive_dqkv.data());
      for (const std::vector<float>* part : {&lse, &dqkv, &naive_out, &probs, &naive_dqkv}) {
        out.insert(out.end(), part->begin(), part->end());
      }
      return out;
    };
    EXPECT_EQ(run(nullptr), run(&pair));
  }
}

TEST(CpuNaiveAttention, GroupsOfOneAreMultiHeadAttentionBitForBit) {
  AttentionShape mha{.batch = 2, .seq = 40, .hidden = 16, .heads = 4, .kv_heads = 0, .causal = true};
  AttentionShape groups = mha;
  groups.kv_heads = 4;
  const std::vector<float> qkv = random_values(qkv_size(mha), 8, 1.0F);
  const std::vector<float> dout = random_values(out_size(mha), 9, 1.0F);
  auto run = [&](const AttentionShape& s) {
    std::vector<float> out(out_size(s)), probs(std::size_t(s.batch * s.heads * s.seq * s.seq)), dqkv(qkv_size(s));
    attention_forward(s, qkv.data(), probs.data(), out.data());
    attention_backward(s, qkv.data(), probs.data(), dout.data(), dqkv.data());
    out.insert(out.end(), dqkv.begin(), dqkv.end());
    return out;
  };
  EXPECT_EQ(run(mha), run(groups));
}

}  // namespace
}  // namespace gpipe::exec::cpu
