// The noise band of a validation row: quartiles interpolated as numpy's
// default (type 7), the band's width, and how far a prediction lies outside
// it, in exact values.
#include "calibration/step_noise.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace gpipe::calibration {
namespace {

TEST(StepNoise, QuantilesInterpolateBetweenOrderStatistics) {
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(quantile(sorted, 0.0), 10);
  EXPECT_DOUBLE_EQ(quantile(sorted, 0.25), 20);
  EXPECT_DOUBLE_EQ(quantile(sorted, 0.5), 30);
  EXPECT_DOUBLE_EQ(quantile(sorted, 1.0), 50);
  // (n - 1) p = 0.75 for four values: a quarter of the way from 1 to 2.
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.75), 7);
}

TEST(StepNoise, MedianAndQuartilesOfUnsortedSteps) {
  const StepNoise noise = step_noise({104, 96, 100, 120, 98});  // sorted: 96 98 100 104 120
  EXPECT_EQ(noise.samples, 5);
  EXPECT_DOUBLE_EQ(noise.median_us, 100);
  EXPECT_DOUBLE_EQ(noise.q1_us, 98);
  EXPECT_DOUBLE_EQ(noise.q3_us, 104);
  EXPECT_DOUBLE_EQ(noise.band_pct(), 6.0);  // (104 - 98) / 100
}

TEST(StepNoise, APredictionInsideTheBandIsZeroPointsOutside) {
  const StepNoise noise = step_noise({96, 98, 100, 104, 120});
  EXPECT_EQ(noise.outside_points(98), 0.0);
  EXPECT_EQ(noise.outside_points(104), 0.0);
  EXPECT_EQ(noise.outside_points(101), 0.0);
  EXPECT_DOUBLE_EQ(noise.outside_points(95), 3.0);   // 3 below q1, in % of the median
  EXPECT_DOUBLE_EQ(noise.outside_points(110), 6.0);  // 6 above q3
  EXPECT_DOUBLE_EQ(noise.error_pct(95), -5.0);
  EXPECT_DOUBLE_EQ(noise.error_pct(110), 10.0);
}

TEST(StepNoise, NoStepsGiveNoBandAndNoError) {
  const StepNoise noise = step_noise({});
  EXPECT_EQ(noise.samples, 0);
  EXPECT_EQ(noise.band_pct(), 0.0);
  EXPECT_EQ(noise.outside_points(5), 0.0);
  EXPECT_TRUE(std::isnan(noise.error_pct(5)));
}

}  // namespace
}  // namespace gpipe::calibration
