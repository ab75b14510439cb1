// Each family's closed-form bubble, and the mean compute times it reads.
#include <gtest/gtest.h>

#include "schedules/analytic_bubble.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::schedules {
namespace {

TEST(AnalyticBubble, GpipeAnd1f1bAreTheClassicForm) {
  for (const char* family : {"gpipe", "1f1b"}) {
    const auto b = analytic_bubble(family, 4, 1, 8, {});
    ASSERT_TRUE(b.has_value()) << family;
    EXPECT_EQ(b->time_over_ideal, 3.0 / 8.0);
    EXPECT_EQ(b->fraction, 3.0 / 11.0);
  }
}

TEST(AnalyticBubble, InterleavedDividesByTheStagesPerRank) {
  for (const char* family : {"interleaved-1f1b", "looped-bfs"}) {
    const auto b = analytic_bubble(family, 4, 2, 8, {});
    ASSERT_TRUE(b.has_value()) << family;
    EXPECT_EQ(b->time_over_ideal, 3.0 / 16.0);
    EXPECT_EQ(b->fraction, 3.0 / 19.0);
  }
}

TEST(AnalyticBubble, ZeroBubbleFormsUseTheStageTimes) {
  // T_F = 10, T_I = 6, T_W = 4 (T_B = 10), K = 4, M = 8: T = 20, ideal 160.
  const MeanComputeTimes t{10, 10, 4};
  const auto h1 = analytic_bubble("zb-h1", 4, 1, 8, t);  // 3 (10 + 6 - 4) = 36
  ASSERT_TRUE(h1.has_value());
  EXPECT_DOUBLE_EQ(h1->time_over_ideal, 36.0 / 160.0);
  EXPECT_DOUBLE_EQ(h1->fraction, 36.0 / 196.0);
}

TEST(AnalyticBubble, InterleavedZeroBubbleIsZbH1sFormPerStage) {
  const MeanComputeTimes t{10, 10, 4};  // T = 20; (K-1)(T_F + T_I - T_W) = 3 x 12 = 36
  for (const char* family : {"interleaved-zb", "dualpipev"}) {
    const auto b = analytic_bubble(family, 4, 2, 8, t);
    ASSERT_TRUE(b.has_value()) << family;
    EXPECT_DOUBLE_EQ(b->time_over_ideal, 36.0 / (2 * 8 * 20));
  }
}

TEST(AnalyticBubble, FamiliesWithoutAClosedFormHaveNone) {
  for (const char* family : {"zb-h2", "zbv", "zb-auto", "my_file"}) {
    EXPECT_FALSE(analytic_bubble(family, 4, 2, 8, {1, 2, 1}).has_value()) << family;
    EXPECT_TRUE(analytic_bubble_forms(family).fraction.empty()) << family;
  }
  EXPECT_EQ(analytic_bubble_forms("gpipe").fraction, "(K-1)/(M+K-1)");
}

TEST(ComputeTimeTotals, MeansOfAFullOrASplitBackward) {
  timelines::ComputeTimeTotals full;
  full.add(ActionKind::F, 10);
  full.add(ActionKind::F, 20);
  full.add(ActionKind::B, 40);
  full.add(ActionKind::R, 1000);  // not a forward of the closed forms
  EXPECT_EQ(full.means().forward, 15.0);
  EXPECT_EQ(full.means().backward, 40.0);
  EXPECT_EQ(full.means().weight, 0.0);
  timelines::ComputeTimeTotals split;
  split.add(ActionKind::F, 10);
  split.add(ActionKind::I, 6);
  split.add(ActionKind::I, 6);
  split.add(ActionKind::W, 4);
  split.add(ActionKind::W, 8);
  EXPECT_EQ(split.means().backward, 12.0);  // (6 + 4 + 6 + 8) / 2
  EXPECT_EQ(split.means().weight, 6.0);
  // Mixed, as DualPipeV: one B of 12, one I of 6 with its W of 6.
  timelines::ComputeTimeTotals mixed;
  mixed.add(ActionKind::B, 12);
  mixed.add(ActionKind::I, 6);
  mixed.add(ActionKind::W, 6);
  EXPECT_EQ(mixed.means().backward, 12.0);
  EXPECT_EQ(mixed.means().weight, 6.0);
}

TEST(Metrics, NoClosedFormIsNullInJson) {
  timelines::Metrics m;
  const auto j = to_json(m);
  EXPECT_TRUE(j.at("bubble_fraction_analytic").is_null());
  EXPECT_EQ(timelines::metrics_from_json(j), m);
}

}  // namespace
}  // namespace gpipe::schedules
