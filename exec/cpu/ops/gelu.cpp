#include "exec/cpu/ops/gelu.hpp"

#include <numbers>

#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {
constexpr float kSqrt2OverPi = static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
constexpr float kCubic = 0.044715F;
}  // namespace

GPIPE_VECTOR_CLONES void gelu_forward(std::int64_t count, const float* x, float* y) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float t = tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v));
    y[i] = 0.5F * v * (1.0F + t);
  }
}

GPIPE_VECTOR_CLONES void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float t = tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float du = kSqrt2OverPi * (1.0F + 3.0F * kCubic * v * v);
    dx[i] = dy[i] * (0.5F * (1.0F + t) + 0.5F * v * (1.0F - t * t) * du);
  }
}

}  // namespace gpipe::exec::cpu
