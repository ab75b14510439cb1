// The bubble the metrics print beside the simulated one is each family's
// closed form (schedules/analytic_bubble.hpp), and with equal stage times and
// free links the simulated bubble equals it, wherever a family has one.
// F = 1000 ns, B = 2000 ns split as I = W = 1000 ns (W <= I <= F + W, the
// zero-bubble forms' condition).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "schedules/generate.hpp"
#include "sim/engine.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;

class EqualStages final : public CostModel {
 public:
  std::int64_t duration_ns(const Action& a) const override {
    switch (a.kind) {
      case ActionKind::F: return 1000;
      case ActionKind::B: return 2000;
      case ActionKind::I:
      case ActionKind::W: return 1000;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
};

timelines::Metrics simulated_metrics(const std::string& family, int k, int m) {
  schedules::ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  return sim::simulate(schedules::generate(family, o), EqualStages{}, UniformLink(0, 1e9)).metrics;
}

void expect_closed_form(const std::string& family, int k, int m) {
  const timelines::Metrics metrics = simulated_metrics(family, k, m);
  const std::string what = fmt::format("{} K={} M={}", family, k, m);
  ASSERT_TRUE(metrics.bubble_time_over_ideal_analytic.has_value()) << what;
  EXPECT_NEAR(metrics.bubble_time_over_ideal, *metrics.bubble_time_over_ideal_analytic, 1e-12) << what;
  EXPECT_NEAR(metrics.bubble_fraction, *metrics.bubble_fraction_analytic, 1e-12) << what;
}

TEST(ClosedFormMetrics, GpipeAnd1f1bAtEveryM) {
  for (const char* family : {"gpipe", "1f1b"}) {
    for (int k = 1; k <= 4; ++k) {
      for (int m = 1; m <= 9; ++m) expect_closed_form(family, k, m);
    }
  }
}

TEST(ClosedFormMetrics, InterleavedFamiliesInWholeRounds) {
  for (const char* family : {"interleaved-1f1b", "looped-bfs", "interleaved-zb"}) {
    for (int k : {2, 3, 4}) {
      for (int m : {k, 2 * k, 3 * k}) expect_closed_form(family, k, m);
    }
  }
}

TEST(ClosedFormMetrics, ZeroBubbleOnceEveryRankIsFull) {
  for (int k : {2, 3, 4}) {
    for (int m = k; m <= 3 * k; ++m) expect_closed_form("zb-h1", k, m);
    for (int m : {2 * k, 3 * k}) expect_closed_form("dualpipev", k, m);
  }
}

TEST(ClosedFormMetrics, FamiliesWithoutOneSayNone) {
  for (const char* family : {"zb-h2", "zbv"}) {
    const timelines::Metrics metrics = simulated_metrics(family, 2, 4);
    EXPECT_FALSE(metrics.bubble_fraction_analytic.has_value()) << family;
    EXPECT_FALSE(metrics.bubble_time_over_ideal_analytic.has_value()) << family;
  }
}

}  // namespace
}  // namespace gpipe::sim
