// The vectorizable exp and sigmoid of exec/cpu/ops/vector_math.hpp against libm
// in double precision, over every range the GELU kernels feed them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "exec/cpu/ops/simd_level.hpp"
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

TEST(VectorMath, SigmoidIsWithinTwoTenthsOfAMillionthRelative) {
  double worst = 0.0;
  for_samples(-80.0F, 80.0F, [&](float z) {
    const double want = 1.0 / (1.0 + std::exp(-static_cast<double>(z)));
    worst = std::max(worst, std::fabs(sigmoid_approx(z) - want) / want);
  });
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(sigmoid_approx(0.0F), 0.5F);
  EXPECT_EQ(sigmoid_approx(100.0F), 1.0F);
  EXPECT_LT(sigmoid_approx(-100.0F), 2e-38F);  // e^-87 after the clamp, not 0 and not NaN
  EXPECT_EQ(sigmoid_approx(std::numeric_limits<float>::infinity()), 1.0F);
  EXPECT_EQ(sigmoid_approx(-std::numeric_limits<float>::infinity()), exp_nonpositive(-87.0F));
  // NaN becomes a number here; GELU multiplies it by its NaN input, so a
  // diverging run's NaN still reaches --check-finite.
  EXPECT_TRUE(std::isfinite(sigmoid_approx(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_nonpositive(std::numeric_limits<float>::quiet_NaN()), exp_nonpositive(-87.0F));
}

// The kernels run the best build this CPU can: AVX-512 where it has x86-64-v4,
// AVX2 and FMA where v3.
TEST(VectorMath, TheKernelsRunTheBestBuildTheCpuSupports) {
#if defined(GPIPE_HAVE_VECTOR_CLONES)
  __builtin_cpu_init();
  const int expected = __builtin_cpu_supports("x86-64-v4") ? 4 : __builtin_cpu_supports("x86-64-v3") ? 3 : 0;
  EXPECT_EQ(simd_level(), expected);
#else
  EXPECT_EQ(simd_level(), 0);  // one baseline build
#endif
}

}  // namespace
}  // namespace gpipe::exec::cpu
