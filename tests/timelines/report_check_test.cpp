// The promises every printed report keeps (timelines/report_check.hpp): a
// metrics computed from a real timeline passes, and each broken promise is
// named, with an InternalError from check_report.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "timelines/metrics.hpp"
#include "timelines/report_check.hpp"

namespace gpipe::timelines {
namespace {

// Two ranks busy 6 and 4 us of a 10 us step: every number in range.
Metrics sound() {
  Timeline tl;
  tl.info = info_of(schedules::generate_gpipe({.num_ranks = 2, .num_microbatches = 1}));
  tl.info.batch_size = 8;
  tl.actions.push_back({schedules::make_action(0, schedules::ActionKind::F, 0), schedules::Rank{0}, Stream::compute, 0, 2'000});
  tl.actions.push_back({schedules::make_action(1, schedules::ActionKind::F, 0), schedules::Rank{1}, Stream::compute, 2'000, 4'000});
  tl.actions.push_back({schedules::make_action(1, schedules::ActionKind::B, 0), schedules::Rank{1}, Stream::compute, 4'000, 6'000});
  tl.actions.push_back({schedules::make_action(0, schedules::ActionKind::B, 0), schedules::Rank{0}, Stream::compute, 6'000, 10'000});
  return compute_metrics(tl);
}

TEST(ReportCheck, MetricsOfARealTimelinePass) {
  const Metrics m = sound();
  EXPECT_EQ(m.step_time_ns, 10'000);
  EXPECT_EQ(report_violation(m), "");
  EXPECT_NO_THROW(check_report(m, "the prediction"));
}

TEST(ReportCheck, ABubbleOutsideZeroToOneIsNamed) {
  Metrics m = sound();
  m.bubble_fraction = -13.43;
  EXPECT_EQ(report_violation(m), "the bubble fraction -13.43 is outside [0, 1]");
  m.bubble_fraction = 1.5;
  EXPECT_EQ(report_violation(m), "the bubble fraction 1.5 is outside [0, 1]");
}

TEST(ReportCheck, ARankBusyLongerThanTheStepIsNamed) {
  Metrics m = sound();
  m.ranks[1].busy_ns = 10'001;
  EXPECT_EQ(report_violation(m), "rank 1 is busy 10001 ns in a step of 10000 ns");
  m.ranks[1].busy_ns = -1;
  EXPECT_EQ(report_violation(m), "rank 1 is busy -1 ns, less than 0");
}

TEST(ReportCheck, NegativeBytesAreNamed) {
  Metrics m = sound();
  m.ranks[0].static_bytes = -48;
  EXPECT_EQ(report_violation(m), "rank 0's static memory -48 bytes is less than 0");
  m = sound();
  m.ranks[0].peak_activation_bytes = -1;
  EXPECT_EQ(report_violation(m), "rank 0's activation peak -1 bytes is less than 0");
}

TEST(ReportCheck, NumbersThatAreNotFiniteAreNamed) {
  Metrics m = sound();
  m.throughput_samples_per_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(report_violation(m), "the throughput (samples/s) inf is not a finite number >= 0");
  m = sound();
  m.step_time_us = std::nan("");
  EXPECT_EQ(report_violation(m), "the step time (us) nan is not a finite number >= 0");
  m = sound();
  m.bubble_fraction_analytic = std::nan("");
  EXPECT_EQ(report_violation(m), "the closed-form bubble fraction nan is outside [0, 1]");
  m = sound();
  m.ranks[0].utilization = 1.25;
  EXPECT_EQ(report_violation(m), "rank 0's utilisation 1.25 is outside [0, 1]");
}

TEST(ReportCheck, AViolationIsAnInternalErrorNamingTheReport) {
  Metrics m = sound();
  m.step_time_ns = -5;
  try {
    check_report(m, "the prediction");
    FAIL() << "no InternalError";
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "report check failed for the prediction: the step time -5 ns is less than 0");
  }
}

}  // namespace
}  // namespace gpipe::timelines
