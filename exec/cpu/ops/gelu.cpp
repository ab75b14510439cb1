#include "exec/cpu/ops/gelu.hpp"

#include <numbers>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

constexpr float k2Sqrt2OverPi = static_cast<float>(2 * std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
constexpr float kCubic = 0.044715F;

// 0.5 v (1 + tanh(u)) = v sigmoid(2u), and its derivative
// sigmoid(2u) + v sigmoid(2u) (1 - sigmoid(2u)) 2 du/dv: one exp and one
// division per element, with no cancellation near 0 to guard against.
GPIPE_VECTOR_CLONES void gelu_forward_range(std::int64_t count, const float* x, float* y) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    y[i] = v * sigmoid_approx(k2Sqrt2OverPi * (v + kCubic * v * v * v));
  }
}

GPIPE_VECTOR_CLONES void gelu_backward_range(std::int64_t count, const float* x, const float* dy,
                                             float* dx) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float s = sigmoid_approx(k2Sqrt2OverPi * (v + kCubic * v * v * v));
    const float dz = k2Sqrt2OverPi * (1.0F + 3.0F * kCubic * v * v);
    dx[i] = dy[i] * (s + v * s * (1.0F - s) * dz);
  }
}

}  // namespace

void gelu_forward(std::int64_t count, const float* x, float* y) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    gelu_forward_range(end - begin, x + begin, y + begin);
  });
}

void gelu_backward(std::int64_t count, const float* x, const float* dy, float* dx) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    gelu_backward_range(end - begin, x + begin, dy + begin, dx + begin);
  });
}

}  // namespace gpipe::exec::cpu
