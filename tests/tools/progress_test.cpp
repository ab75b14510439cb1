// Progress of long work (tools/common/progress.hpp): the estimate's text and when it is
// said, the bar's text and how often it redraws, at exact times.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <string>

#include "tools/common/progress.hpp"

namespace gpipe::tools {
namespace {

using Clock = Progress::Clock;
const Clock::time_point t0{};

Clock::time_point at(double seconds) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

TEST(FormatDuration, TwoUnitsRoundedToTheSmallerCarryingAtEachBound) {
  EXPECT_EQ(format_duration(0), "1 s");
  EXPECT_EQ(format_duration(44.6), "45 s");
  EXPECT_EQ(format_duration(59.4), "59 s");
  EXPECT_EQ(format_duration(59.5), "1 min");
  EXPECT_EQ(format_duration(125), "2 min 5 s");
  EXPECT_EQ(format_duration(3599.4), "59 min 59 s");
  EXPECT_EQ(format_duration(3599.5), "1 h");
  EXPECT_EQ(format_duration(10800), "3 h");
  EXPECT_EQ(format_duration(12000), "3 h 20 min");
  EXPECT_EQ(format_duration(86369), "23 h 59 min");
  EXPECT_EQ(format_duration(86370), "1 d");
  EXPECT_EQ(format_duration(187200), "2 d 4 h");
  EXPECT_EQ(format_duration(std::nan("")), "11574074074 d 2 h");  // nonsense is capped at 1e15 s
}

TEST(ProgressBar, FortyColumnsAndTheCount) {
  EXPECT_EQ(progress_bar(20, 100, "steps"), "[########" + std::string(32, ' ') + "] 20/100 steps");
  EXPECT_EQ(progress_bar(0, 3, "passes"), "[" + std::string(40, ' ') + "] 0/3 passes");
  EXPECT_EQ(progress_bar(0, 0, "x"), "[" + std::string(40, '#') + "] 0/0 x");
}

TEST(Progress, EstimatesFromTheFirstUnitOnOnceASecondIsMeasured) {
  std::ostringstream out;
  Progress p(100'000'000, "steps", out, {}, t0);
  p.update(1, "", at(0.5));  // the first step, after 0.5 s of setup: not counted per step
  p.update(1001, "", at(1.0));
  EXPECT_EQ(out.str(), "");  // 0.5 s measured
  p.update(2001, "", at(1.5));
  // 2000 steps in 1 s: 1.5 s + (1e8 - 2001) x 0.5 ms = 50000.4995 s.
  ASSERT_TRUE(p.estimate_s().has_value());
  EXPECT_DOUBLE_EQ(*p.estimate_s(), 1.5 + 0.0005 * (100'000'000 - 2001));
  EXPECT_EQ(out.str(), "about 13 h 53 min for 100000000 steps\n");
  p.update(3001, "", at(2.0));
  EXPECT_EQ(out.str(), "about 13 h 53 min for 100000000 steps\n");  // said once
}

TEST(Progress, SaysNothingOfWorkShorterThanTenSeconds) {
  std::ostringstream out;
  Progress p(200, "configurations", out, {}, t0);
  p.update(0, "", at(0.1));  // nothing done yet: no first unit
  p.update(10, "", at(0.2));
  p.update(110, "", at(1.2));
  ASSERT_TRUE(p.estimate_s().has_value());
  EXPECT_DOUBLE_EQ(*p.estimate_s(), 1.2 + 0.01 * 90);
  p.update(200, "", at(2.1));
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, EstimatesFromTheStartWhenTheFirstUnitTookASecond) {
  std::ostringstream out;
  Progress p(10, "steps", out, {}, t0);
  p.update(1, "", at(3600));
  EXPECT_EQ(out.str(), "about 10 h for 10 steps\n");
}

TEST(Progress, NeverEstimatesFinishedWork) {
  std::ostringstream out;
  Progress p(3, "passes", out, {}, t0);
  p.update(3, "", at(100));
  EXPECT_FALSE(p.estimate_s().has_value());
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, BarRedrawsAtMostEveryTenthOfASecondAndEndsItsLine) {
  std::ostringstream out;
  Progress p(4, "configurations", out, {.bar = true}, t0);
  p.update(0, "", at(0));
  EXPECT_EQ(out.str(), "\r[" + std::string(40, ' ') + "] 0/4 configurations\x1b[K");
  out.str("");
  p.update(1, "", at(0.05));
  EXPECT_EQ(out.str(), "");  // 50 ms after the last drawing
  p.update(4, "", at(0.06));  // the end is always drawn, and ends the line
  EXPECT_EQ(out.str(), "\r[" + std::string(40, '#') + "] 4/4 configurations\x1b[K\n");
  out.str("");
  p.update(4, "", at(1));
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, EstimateLineTakesTheBarsLineAndTheBarSaysWhatIsLeft) {
  std::ostringstream out;
  Progress p(1000, "steps", out, {.bar = true}, t0);
  p.update(1, "loss 0.9", at(0.5));
  EXPECT_EQ(out.str(), "\r[" + std::string(40, ' ') + "] 1/1000 steps  loss 0.9\x1b[K");
  out.str("");
  p.update(101, "loss 0.5", at(1.5));
  // 100 steps in 1 s: 1.5 + 899 x 0.01 = 10.49 s, over 10 s; 8.99 s left.
  EXPECT_EQ(out.str(), "\r\x1b[Kabout 10 s for 1000 steps\n\r[####" + std::string(36, ' ') +
                           "] 101/1000 steps  loss 0.5  (about 9 s left)\x1b[K");
}

}  // namespace
}  // namespace gpipe::tools
