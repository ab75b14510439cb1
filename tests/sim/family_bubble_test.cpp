// Each schedule family's simulated bubble against its closed form, exact to
// the ns: K ranks, equal stage times (F = B = 1 unit; I = W = 1/2 unit where
// the backward is split), free links, no recompute. idle = K x step time -
// the ranks' busy time, summed over the ranks.
//
// | family           | step time / closed form (units; V stages per rank)                   |
// | ---------------- | -------------------------------------------------------------------- |
// | gpipe, 1f1b      | 2(M+K-1); bubble fraction (K-1)/(M+K-1)                               |
// | looped-bfs       | 2(VM + K-1 + (V-1)max(0, K-M)); fraction (K-1)/(VM+K-1) for M >= K    |
// | interleaved-1f1b | the same step time; bubble time / ideal time (K-1)/(VM) for M >= K,   |
// |                  | Megatron's form (torch's rounds keep it for M not a multiple of K)    |
// | interleaved-zb   | idle per rank (K-1)(F+I-W) for M >= K and W <= I: the zero-bubble     |
// |                  | paper's ZB1P/ZB-H1 bubble, per stage: (K-1)/(2VM) of the ideal here   |
// | dualpipev        | idle per rank (K-1)(F+I-W) for M >= 2K and W <= I <= F+W, the pairs   |
// |                  | run back to back (DualPipe's (PP/2-1)(F&B+B-3W) needs the overlap)    |
// | zbv              | none exact at I = W = F/2 (K=4: idle 4.5, 4, 3.5, 4 units for M = 4..7);|
// |                  | at the paper's F = I = W, idle per rank (K-1)F once M >= floor(3K/2)  |
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "schedules/generate.hpp"
#include "sim/engine.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;

constexpr std::int64_t kUnit = 1'000;  // ns

// Every stage alike: F, I and W as given, B = I + W; nothing moves or is kept.
class UniformStageCosts final : public CostModel {
 public:
  UniformStageCosts(std::int64_t f, std::int64_t i, std::int64_t w) : f_(f), i_(i), w_(w) {}
  std::int64_t duration_ns(const Action& a) const override {
    switch (a.kind) {
      case ActionKind::F: return f_;
      case ActionKind::B: return i_ + w_;
      case ActionKind::I: return i_;
      case ActionKind::W: return w_;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }

 private:
  std::int64_t f_, i_, w_;
};

const UniformStageCosts kEqualStages(kUnit, kUnit / 2, kUnit / 2);  // F = B = 1, I = W = 1/2

struct Simulated {
  timelines::Metrics metrics;
  std::int64_t idle_ns = 0;  // summed over the ranks
};

Simulated simulate_family(const char* name, int k, int m, int v, const CostModel& costs = kEqualStages,
                    schedules::BackwardOrder order = schedules::BackwardOrder::reverse) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.stages_per_rank = v;
  o.num_microbatches = m;
  o.backward_order = order;
  SimOptions quiet;
  quiet.record_timeline = false;
  Simulated run{simulate(schedules::generate(name, o), costs, FreeLink(), quiet).metrics};
  std::int64_t busy = 0;
  for (const auto& rank : run.metrics.ranks) busy += rank.busy_ns;
  run.idle_ns = k * run.metrics.step_time_ns - busy;
  return run;
}

// Whether torch (and so our generator) takes the configuration.
bool interleaved_takes(int k, int m) { return m % std::max(1, m / k) == 0; }

TEST(FamilyBubble, GpipeAndOneFOneBHaveTheGpipePapersBubble) {
  for (int k = 1; k <= 6; ++k) {
    for (int m = 1; m <= 12; ++m) {
      for (const auto order : {schedules::BackwardOrder::reverse, schedules::BackwardOrder::forward}) {
        const Simulated gpipe = simulate_family("gpipe", k, m, 1, kEqualStages, order);
        EXPECT_EQ(gpipe.metrics.step_time_ns, 2 * (m + k - 1) * kUnit) << "K=" << k << " M=" << m;
        EXPECT_DOUBLE_EQ(gpipe.metrics.bubble_fraction, double(k - 1) / (m + k - 1));
      }
      const Simulated one_f_one_b = simulate_family("1f1b", k, m, 1);
      EXPECT_EQ(one_f_one_b.metrics.step_time_ns, 2 * (m + k - 1) * kUnit) << "K=" << k << " M=" << m;
      EXPECT_DOUBLE_EQ(one_f_one_b.metrics.bubble_fraction, double(k - 1) / (m + k - 1));
    }
  }
}

TEST(FamilyBubble, LoopedBfsIsGpipeOverVTimesTheMicrobatches) {
  for (int v = 2; v <= 4; ++v) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = 1; m <= 12; ++m) {
        const Simulated run = simulate_family("looped-bfs", k, m, v);
        // With M < K a rank's next stage waits for micro-batch 0 to come round the ranks.
        const int wait = (v - 1) * std::max(0, k - m);
        EXPECT_EQ(run.metrics.step_time_ns, 2 * (v * m + k - 1 + wait) * kUnit)
            << "K=" << k << " M=" << m << " V=" << v;
        if (m >= k) {
          EXPECT_DOUBLE_EQ(run.metrics.bubble_fraction, double(k - 1) / (v * m + k - 1));
        }
      }
    }
  }
  // K=4, M=8, V=2: 3 / 19 of the step idle, against GPipe's 3 / 11.
  EXPECT_DOUBLE_EQ(simulate_family("looped-bfs", 4, 8, 2).metrics.bubble_fraction, 3.0 / 19.0);
}

TEST(FamilyBubble, Interleaved1f1bHasMegatronsBubble) {
  int multiples = 0;
  for (int v = 2; v <= 4; ++v) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = 1; m <= 12; ++m) {
        if (!interleaved_takes(k, m)) continue;
        const Simulated run = simulate_family("interleaved-1f1b", k, m, v);
        const int wait = (v - 1) * std::max(0, k - m);
        EXPECT_EQ(run.metrics.step_time_ns, 2 * (v * m + k - 1 + wait) * kUnit)
            << "K=" << k << " M=" << m << " V=" << v;
        if (m % k == 0) {
          // Megatron-LM (Narayanan et al. 2021, Section 2.2): bubble time / ideal time = (K-1)/(V M).
          EXPECT_DOUBLE_EQ(run.metrics.bubble_time_over_ideal, double(k - 1) / (v * m))
              << "K=" << k << " M=" << m << " V=" << v;
          ++multiples;
        }
      }
    }
  }
  EXPECT_EQ(multiples, 3 * (12 + 6 + 4 + 3 + 2 + 2));
  // K=4, M=8, V=2: 3/16 of the ideal, half of 1F1B's 3/8.
  EXPECT_DOUBLE_EQ(simulate_family("interleaved-1f1b", 4, 8, 2).metrics.bubble_time_over_ideal, 3.0 / 16.0);
}

TEST(FamilyBubble, InterleavedZeroBubbleHasZb1psBubblePerStage) {
  const UniformStageCosts uneven(3 * kUnit, 2 * kUnit, kUnit);  // F=3, I=2, W=1: idle (K-1)(3+2-1)
  for (int v = 2; v <= 3; ++v) {
    for (int k = 1; k <= 6; ++k) {
      for (int m = k; m <= 12; ++m) {
        if (!interleaved_takes(k, m)) continue;
        const Simulated run = simulate_family("interleaved-zb", k, m, v);
        EXPECT_EQ(run.idle_ns, k * (k - 1) * kUnit) << "K=" << k << " M=" << m << " V=" << v;
        EXPECT_DOUBLE_EQ(run.metrics.bubble_time_over_ideal, double(k - 1) / (2 * v * m));
        EXPECT_EQ(simulate_family("interleaved-zb", k, m, v, uneven).idle_ns, k * (k - 1) * 4 * kUnit)
            << "K=" << k << " M=" << m << " V=" << v;
      }
    }
  }
}

TEST(FamilyBubble, DualPipeVRunBackToBackHasZb1psBubble) {
  const UniformStageCosts uneven(3 * kUnit, 2 * kUnit, kUnit);
  for (int k = 1; k <= 6; ++k) {
    for (int m = 2 * k; m <= 16; ++m) {
      const Simulated run = simulate_family("dualpipev", k, m, 2);
      EXPECT_EQ(run.idle_ns, k * (k - 1) * kUnit) << "K=" << k << " M=" << m;
      EXPECT_DOUBLE_EQ(run.metrics.bubble_time_over_ideal, double(k - 1) / (4 * m));
      EXPECT_EQ(simulate_family("dualpipev", k, m, 2, uneven).idle_ns, k * (k - 1) * 4 * kUnit)
          << "K=" << k << " M=" << m;
    }
  }
}

TEST(FamilyBubble, ZbvIdlesOneForwardPerHopWhenFIAndWAreEqual) {
  // The zero-bubble paper's condition for ZB-V (T_F = T_B = T_W, B being I
  // here): the paper calls its bubble zero; torch's ZB-V leaves each rank idle
  // (K-1) forwards once M >= floor(3K/2), the fill of the V.
  const UniformStageCosts equal(kUnit, kUnit, kUnit);
  for (int k = 1; k <= 6; ++k) {
    for (int m = 3 * k / 2; m <= 24; ++m) {
      EXPECT_EQ(simulate_family("zbv", k, m, 2, equal).idle_ns, k * (k - 1) * kUnit) << "K=" << k << " M=" << m;
    }
  }
  // At I = W = F/2 there is none: the idle time wanders with M (K=4, per rank).
  for (const auto& [m, idle_halves] : {std::pair{4, 9}, {5, 8}, {6, 7}, {7, 8}, {12, 8}}) {
    EXPECT_EQ(simulate_family("zbv", 4, m, 2).idle_ns, 4 * idle_halves * kUnit / 2) << "M=" << m;
  }
}

}  // namespace
}  // namespace gpipe::sim
