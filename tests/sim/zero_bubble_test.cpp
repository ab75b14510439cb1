// ZB-H1 and ZB-H2 on the engine against the zero-bubble paper's closed forms
// (Qi et al., ICLR 2024, section 3, Table 2), exact to the ns, with free links.
//
// Units: the paper's B is our I (the input gradient); our full backward B is
// I + W. The paper states its forms for T_F = T_B = T_W; here T_F = T_I = T_W
// = 1000 ns (a full backward of 2000 ns), and other times with
// T_W <= min(T_F, T_I), where the forms stay exact. In our units:
//   1F1B:  bubble per rank (K-1)(T_F + T_I + T_W)      = (K-1)(T_F + T_B)
//   ZB-H1: bubble per rank (K-1)(T_F + T_I - T_W)      = (K-1)(T_F + T_B - 2 T_W)
//   ZB-H2: bubble per rank (K-1)(T_F + T_I - 2 T_W)    = (K-1)(T_F + T_B - 3 T_W)
// where the paper counts a rank's bubble from its first action to its last,
// the idle time inside that span. For 1F1B and ZB-H1 rank 0 starts at 0 and
// ends last, so it is also step time - busy time. ZB-H2's ranks start (K-1)
// forwards apart and each is then never idle: step time - busy = (K-1) T_F.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "schedules/generate.hpp"
#include "sim/engine.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;

// Every stage alike: F, I and W times, B = I + W, R = F; A bytes kept per micro-batch.
class SplitCosts final : public CostModel {
 public:
  SplitCosts(std::int64_t tf, std::int64_t ti, std::int64_t tw, std::int64_t a = 0)
      : tf_(tf), ti_(ti), tw_(tw), a_(a) {}
  std::int64_t duration_ns(const schedules::Action& action) const override {
    switch (action.kind) {
      case ActionKind::F:
      case ActionKind::R: return tf_;
      case ActionKind::I: return ti_;
      case ActionKind::W: return tw_;
      case ActionKind::B: return ti_ + tw_;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return a_; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }

 private:
  std::int64_t tf_, ti_, tw_, a_;
};

schedules::Schedule schedule_of(const char* name, int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return schedules::generate(name, o);
}

// The paper's bubble of a rank: idle time between its first start and its last end.
std::vector<std::int64_t> bubble_in_span(const timelines::Timeline& t, int num_ranks) {
  std::vector<std::int64_t> first(num_ranks, std::numeric_limits<std::int64_t>::max());
  std::vector<std::int64_t> last(num_ranks, 0);
  std::vector<std::int64_t> busy(num_ranks, 0);
  for (const auto& a : t.actions) {
    if (a.stream != timelines::Stream::compute) continue;
    const auto r = a.rank.at();
    first[r] = std::min(first[r], a.start_ns);
    last[r] = std::max(last[r], a.end_ns);
    busy[r] += a.duration_ns();
  }
  std::vector<std::int64_t> idle(num_ranks);
  for (int r = 0; r < num_ranks; ++r) idle[r] = last[r] - first[r] - busy[r];
  return idle;
}

// (T_F, T_I, T_W) in ns with T_W <= min(T_F, T_I).
const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> kTimes = {
    {1000, 1000, 1000}, {1500, 1200, 700}, {1000, 2000, 1000}, {3000, 1000, 1000}, {2000, 2000, 1},
};

TEST(ZeroBubbleClosedForm, OneFOneBWithASplitBackwardIsOneFOneB) {
  // The baseline the paper compares with: B = I + W, (M+K-1)(T_F + T_B).
  for (int k = 1; k <= 6; ++k) {
    for (int m = 1; m <= 10; ++m) {
      const auto r = simulate(schedule_of("1f1b", k, m), SplitCosts(1000, 1000, 1000), FreeLink());
      EXPECT_EQ(r.metrics.step_time_ns, (m + k - 1) * 3000) << "K=" << k << " M=" << m;
    }
  }
}

TEST(ZeroBubbleClosedForm, ZbH1BubbleIsOneThirdOfOneFOneBs) {
  int checked = 0;
  for (const auto& [tf, ti, tw] : kTimes) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = k; m <= 12; ++m) {
        const SplitCosts costs(tf, ti, tw);
        const auto h1 = simulate(schedule_of("zb-h1", k, m), costs, FreeLink());
        const auto base = simulate(schedule_of("1f1b", k, m), costs, FreeLink());
        const std::int64_t busy = m * (tf + ti + tw);
        const std::int64_t tb = ti + tw;
        for (const auto& rank : h1.metrics.ranks) ASSERT_EQ(rank.busy_ns, busy);
        // Step time - busy = rank 0's bubble: (K-1)(T_F + T_B - 2 T_W) against 1F1B's (K-1)(T_F + T_B).
        EXPECT_EQ(h1.metrics.step_time_ns - busy, (k - 1) * (tf + tb - 2 * tw))
            << "K=" << k << " M=" << m << " T=" << tf << "," << ti << "," << tw;
        EXPECT_EQ(base.metrics.step_time_ns - busy, (k - 1) * (tf + tb));
        const auto idle = bubble_in_span(simulate(schedule_of("zb-h1", k, m), costs, FreeLink()).timeline, k);
        EXPECT_EQ(*std::max_element(idle.begin(), idle.end()), (k - 1) * (tf + ti - tw));
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * (12 + 11 + 10 + 9 + 8 + 7));
  // T_F = T_I = T_W = 1000 ns, K=4, M=8: 3000 ns against 9000 ns, a third.
  const auto h1 = simulate(schedule_of("zb-h1", 4, 8), SplitCosts(1000, 1000, 1000), FreeLink());
  EXPECT_EQ(h1.metrics.step_time_ns, 8 * 3000 + 3000);
}

TEST(ZeroBubbleClosedForm, ZbH1KeepsOneFOneBsPeakActivationMemory) {
  const std::int64_t a = 1000;
  for (int k = 1; k <= 6; ++k) {
    for (int m = 1; m <= 12; ++m) {
      const SplitCosts costs(1000, 1000, 1000, a);
      const auto h1 = simulate(schedule_of("zb-h1", k, m), costs, FreeLink());
      const auto base = simulate(schedule_of("1f1b", k, m), costs, FreeLink());
      const auto peak = [](const timelines::Metrics& mt) {
        std::int64_t p = 0;
        for (const auto& r : mt.ranks) p = std::max(p, r.peak_activation_bytes);
        return p;
      };
      EXPECT_EQ(peak(h1.metrics), peak(base.metrics)) << "K=" << k << " M=" << m;
      EXPECT_EQ(peak(h1.metrics), std::min(m, k) * a);
    }
  }
}

TEST(ZeroBubbleClosedForm, ZbH2HasNoBubbleOnceMIsAtLeastTwoKMinusOne) {
  int checked = 0;
  for (const auto& [tf, ti, tw] : kTimes) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = 2 * k - 1; m <= 2 * k + 6; ++m) {
        const auto r = simulate(schedule_of("zb-h2", k, m), SplitCosts(tf, ti, tw, 1000), FreeLink());
        const auto idle = bubble_in_span(r.timeline, k);
        EXPECT_EQ(*std::max_element(idle.begin(), idle.end()), (k - 1) * (tf + ti - 2 * tw))
            << "K=" << k << " M=" << m << " T=" << tf << "," << ti << "," << tw;
        for (const auto& rank : r.metrics.ranks) {
          EXPECT_EQ(rank.peak_activation_bytes, (2 * k - 1) * 1000);  // about twice 1F1B's K
        }
        if (tf == ti && ti == tw) {
          // One step's makespan is then ZB-H1's too, 3 M T + (K-1) T: the parallelogram
          // pays off when steps run back to back (the paper bypasses the optimizer's sync).
          EXPECT_EQ(r.metrics.step_time_ns, simulate(schedule_of("zb-h1", k, m), SplitCosts(tf, ti, tw), FreeLink())
                                                .metrics.step_time_ns);
          // The paper's condition T_F = T_B(=I) = T_W: every rank busy from its first action to
          // its last; the step still waits (K-1) T_F for the first forward to reach the last rank.
          for (const std::int64_t x : idle) EXPECT_EQ(x, 0);
          EXPECT_EQ(r.metrics.step_time_ns, (k - 1) * tf + m * (tf + ti + tw));
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * 6 * 8);
}

TEST(ZeroBubbleClosedForm, ZbH2NeedsTwoKMinusOneMicrobatches) {
  // With M = 2K-2 the warm-up of rank 0 runs out of forwards: a bubble remains.
  const auto r = simulate(schedule_of("zb-h2", 4, 6), SplitCosts(1000, 1000, 1000), FreeLink());
  const auto idle = bubble_in_span(r.timeline, 4);
  EXPECT_GT(*std::max_element(idle.begin(), idle.end()), 0);
}

}  // namespace
}  // namespace gpipe::sim
