// A measured stream's times as JSON (timelines/serving_json.hpp): exact both
// ways (integers), and a malformed one is an InputError that says what.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "tests/error_of.hpp"
#include "timelines/serving_json.hpp"

namespace gpipe::timelines {
namespace {

using gpipe::testing::error_of;

TEST(StreamJson, TheTimesSurviveExactly) {
  ServingRun run;
  run.items = {{0, 0, 123'456'789'012}, {5, 90, 200}};
  run.busy_ns = {80, 9'000'000'000'001};
  run.peak_bytes = {64, 72};
  run.state_bytes = {0, 16};
  const ServingRun back = serving_run_from_json(nlohmann::json::parse(serving_run_to_json(run).dump()));
  EXPECT_EQ(back.items, run.items);
  EXPECT_EQ(back.busy_ns, run.busy_ns);
  EXPECT_EQ(back.peak_bytes, run.peak_bytes);
  EXPECT_EQ(back.state_bytes, run.state_bytes);
}

TEST(StreamJson, AMalformedRunSaysWhat) {
  nlohmann::json j = serving_run_to_json(ServingRun{{{0, 0, 1}}, {1, 2}, {3, 4}, {0, 0}, {}});
  nlohmann::json short_peaks = j;
  short_peaks["peak_bytes"] = {3};
  EXPECT_EQ(error_of([&] { (void)serving_run_from_json(short_peaks); }),
            "a stream's run: 2 busy times, 1 peaks and 2 state sizes for its ranks");
  j.erase("items_ns");
  EXPECT_NE(error_of([&] { (void)serving_run_from_json(j); }).find("a stream's run: "), std::string::npos);
}

}  // namespace
}  // namespace gpipe::timelines
