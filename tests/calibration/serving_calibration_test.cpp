// Calibration of inference streams (calibration/serving_calibration.hpp):
// a small grid predicted and served for real, rows in grid order with their
// noise over the rounds, skipped rows kept with their reason, peaks equal
// with one item in flight, and the CSV's fixed head.
#include <gtest/gtest.h>

#include <string>

#include "calibration/serving_calibration.hpp"
#include "models/model_spec.hpp"
#include "plan/model_profile.hpp"

namespace gpipe::calibration {
namespace {

TEST(StreamCalibration, PredictsAndServesEveryConfigurationOfTheGrid) {
  ServingCalibrationOptions o;
  o.model = models::parse_model("transformer:layers=2,hidden=16,heads=2,seq=8,vocab=32");  // 4 layers
  o.stages = {1, 2, 5};  // 5 stages cannot exist
  o.in_flight = {1, 2};
  o.micro_batch_sizes = {2};
  o.workload = {.requests = 6, .in_flight = 1};
  o.rounds = 3;
  int runs = 0;
  o.on_run = [&runs](int, int, int) { ++runs; };
  const profiles::Profile profile = plan::balancing_profile(o.model, std::vector<int>{2});
  const std::vector<ServingCalibrationRow> rows = run_serving_calibration(profile, o);
  ASSERT_EQ(rows.size(), 6U);
  EXPECT_EQ(runs, 3 * 4);  // four configurations can exist, three rounds each
  for (std::size_t i = 0; i < 4; ++i) {
    const ServingCalibrationRow& r = rows[i];
    ASSERT_TRUE(r.ok()) << r.skipped;
    EXPECT_EQ(r.throughput.samples, 3);
    EXPECT_EQ(r.latency_p50.samples, 3);
    EXPECT_EQ(r.predicted.requests, 6);
    EXPECT_EQ(r.measured.requests, 6);
    EXPECT_GT(r.throughput.median_us, 0);
    // One item in flight: every rank holds what the rules say, in the same order.
    if (r.in_flight == 1) {
      EXPECT_TRUE(r.peak_activation_equal()) << "K=" << r.stages;
    }
  }
  EXPECT_EQ(rows[0].stages, 1);
  EXPECT_EQ(rows[1].in_flight, 2);
  EXPECT_EQ(rows[3].partition, (std::vector<int>{2, 2}));
  EXPECT_FALSE(rows[4].ok());
  EXPECT_NE(rows[4].skipped.find("--stages 5 exceeds the 4 layers"), std::string::npos) << rows[4].skipped;
  const std::string csv = serving_calibration_csv(rows);
  EXPECT_TRUE(csv.starts_with("stages,in_flight,micro_batch_size,requests,partition,status,reason,"));
  EXPECT_NE(csv.find("\n5,1,2,,,skipped,"), std::string::npos) << csv;
  EXPECT_EQ(serving_calibration_json(rows).size(), 6U);
}

}  // namespace
}  // namespace gpipe::calibration
