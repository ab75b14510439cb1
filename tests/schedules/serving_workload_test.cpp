// The inference workload (schedules/serving_workload.hpp): arrival times, and the
// refusals of what cannot be, each naming its flag.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/error.hpp"
#include "schedules/serving_workload.hpp"
#include "tests/error_of.hpp"

namespace gpipe::schedules {
namespace {

using gpipe::testing::error_of;

TEST(InferenceWorkload, ClosedLoopArrivesAtZero) {
  EXPECT_EQ(arrival_times_ns({.requests = 3, .in_flight = 2}), (std::vector<std::int64_t>{0, 0, 0}));
}

TEST(InferenceWorkload, IntervalArrivalsAreMultiples) {
  Workload w{.requests = 4, .in_flight = 1, .arrival_interval_us = 2.5};
  EXPECT_EQ(arrival_times_ns(w), (std::vector<std::int64_t>{0, 2500, 5000, 7500}));
}

TEST(InferenceWorkload, PoissonArrivalsAreSeededAndHaveTheRate) {
  Workload w{.requests = 20001, .in_flight = 1, .arrival_rate_per_s = 1e4, .seed = 3};
  const std::vector<std::int64_t> a = arrival_times_ns(w);
  EXPECT_EQ(a, arrival_times_ns(w));  // the seed alone decides
  EXPECT_EQ(a.front(), 0);
  EXPECT_TRUE(std::ranges::is_sorted(a));
  // 20000 gaps of mean 100 us: their mean within 3 % (the standard error is 0.7 %).
  const double mean_gap_us = static_cast<double>(a.back()) / 20000 / 1e3;
  EXPECT_NEAR(mean_gap_us, 100.0, 3.0);
  w.seed = 4;
  EXPECT_NE(a, arrival_times_ns(w));
}

TEST(InferenceWorkload, RefusesWhatCannotBe) {
  EXPECT_EQ(error_of([] { validate_workload({.requests = 0, .in_flight = 1}); }),
            "--requests must be at least 1, got 0");
  EXPECT_EQ(error_of([] { validate_workload({.requests = 1, .in_flight = 0}); }),
            "--in-flight must be at least 1, got 0");
  for (const double rate : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    const std::string e = error_of([&] { validate_workload({.requests = 1, .in_flight = 1, .arrival_rate_per_s = rate}); });
    EXPECT_TRUE(e.starts_with("--arrival-rate must be a finite positive number")) << e;
  }
  EXPECT_TRUE(error_of([] {
                validate_workload({.requests = 1, .in_flight = 1, .arrival_interval_us = -1.0});
              }).starts_with("--arrival-interval-us must be"));
  EXPECT_TRUE(error_of([] {
                validate_workload({.requests = 1, .in_flight = 1, .arrival_interval_us = 1.0, .arrival_rate_per_s = 1.0});
              }).starts_with("--arrival-interval-us and --arrival-rate exclude each other"));
}

}  // namespace
}  // namespace gpipe::schedules
