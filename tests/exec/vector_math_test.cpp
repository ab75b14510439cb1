// The vectorizable exp and tanh of exec/cpu/ops/vector_math.hpp against libm
// in double precision, over every range the GELU kernels feed them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {
namespace {

// Steps of 1e-4 relative (and every float near 0, where tanh is steepest in relative terms).
template <typename F>
void for_samples(float from, float to, F&& f) {
  for (float u = from; u <= to;) {
    f(u);
    const float step = std::fabs(u) * 1e-4F;
    u = step > 0.0F ? u + step : std::nextafter(u, to + 1.0F);
    if (std::fabs(u) < 1e-6F && u > 0.0F) u = std::nextafter(u, to + 1.0F);
  }
}

TEST(VectorMath, ExpIsWithinTwoTenthsOfAMillionthRelative) {
  double worst = 0.0;
  for_samples(-87.0F, 0.0F, [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(exp_nonpositive(x) - want) / want);
  });
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(exp_nonpositive(0.0F), 1.0F);
  // Clamped at -87: e^-87 = 1.6e-38, the end of the normal floats.
  EXPECT_EQ(exp_nonpositive(-1000.0F), exp_nonpositive(-87.0F));
  EXPECT_LT(exp_nonpositive(-87.0F), 2e-38F);
}

TEST(VectorMath, TanhIsWithinFourTenthsOfAMillionthRelative) {
  double worst = 0.0;
  for_samples(-20.0F, 20.0F, [&](float u) {
    if (u == 0.0F) return;
    const double want = std::tanh(static_cast<double>(u));
    worst = std::max(worst, std::fabs(tanh_approx(u) - want) / std::fabs(want));
  });
  EXPECT_LT(worst, 4e-7);  // measured 3.0e-7, at u = 0.16 (just past the series' range)
  EXPECT_EQ(tanh_approx(0.0F), 0.0F);
  EXPECT_EQ(tanh_approx(30.0F), 1.0F);
  EXPECT_EQ(tanh_approx(-30.0F), -1.0F);
  EXPECT_EQ(tanh_approx(1e-20F), 1e-20F);
  EXPECT_EQ(tanh_approx(std::numeric_limits<float>::infinity()), 1.0F);
  EXPECT_EQ(tanh_approx(-std::numeric_limits<float>::infinity()), -1.0F);
  // A diverging run's NaN must stay NaN, so that --check-finite sees it.
  EXPECT_TRUE(std::isnan(tanh_approx(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_nonpositive(std::numeric_limits<float>::quiet_NaN()), exp_nonpositive(-87.0F));
}

}  // namespace
}  // namespace gpipe::exec::cpu
