#include "exec/cpu/ops/swiglu.hpp"

#include <cstdint>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// sigmoid(v) with its tail cut to 0 below -87: exp_nonpositive clamps there, so
// sigmoid_approx stays at e^-87 ~ 1.6e-38 for any v below, and v * sigmoid(v)
// would grow with |v| (-1.6 at v = -1e38). The true value there is under 2e-38:
// 0 loses nothing, and silu and its derivative go to 0 as they should. NaN
// gives 0 too; callers multiply by v, which keeps the NaN.
[[gnu::always_inline]] inline float sigmoid_tail0(float v) {
  const float s = sigmoid_approx(v);
  // A select in bits, so the loops around it stay SIMD (see sigmoid_approx).
  const std::int32_t keep = -static_cast<std::int32_t>(v >= -87.0F);
  const auto bits = __builtin_bit_cast(std::int32_t, s);
  return __builtin_bit_cast(float, keep & bits);
}

// silu'(v) = s + v s (1 - s) = s (1 + v (1 - s)), s = sigmoid(v): no
// cancellation for either sign (1 - s is computed exactly where s > 1/2).
[[gnu::always_inline]] inline float silu_grad(float v, float s) {
  return s * (1.0F + v * (1.0F - s));
}

GPIPE_VECTOR_CLONES void swiglu_forward_range(std::int64_t count, const float* gate,
                                              const float* up, float* h) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    h[i] = g * sigmoid_tail0(g) * up[i];
  }
}

GPIPE_VECTOR_CLONES void swiglu_backward_range(std::int64_t count, const float* gate,
                                               const float* up, const float* dh, float* dgate,
                                               float* dup) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    // All three inputs are read before either output is written: the aliasing
    // the header allows.
    const float g = gate[i];
    const float u = up[i];
    const float d = dh[i];
    const float s = sigmoid_tail0(g);
    dgate[i] = d * u * silu_grad(g, s);
    dup[i] = d * (g * s);
  }
}

GPIPE_VECTOR_CLONES void silu_forward_range(std::int64_t count, const float* x, float* y) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    y[i] = v * sigmoid_tail0(v);
  }
}

GPIPE_VECTOR_CLONES void silu_backward_range(std::int64_t count, const float* x, const float* dy,
                                             float* dx) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    dx[i] = dy[i] * silu_grad(v, sigmoid_tail0(v));
  }
}

}  // namespace

void swiglu_forward(std::int64_t count, const float* gate, const float* up, float* h) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    swiglu_forward_range(end - begin, gate + begin, up + begin, h + begin);
  });
}

void swiglu_backward(std::int64_t count, const float* gate, const float* up, const float* dh,
                     float* dgate, float* dup) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    swiglu_backward_range(end - begin, gate + begin, up + begin, dh + begin, dgate + begin,
                          dup + begin);
  });
}

void silu_forward(std::int64_t count, const float* x, float* y) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    silu_forward_range(end - begin, x + begin, y + begin);
  });
}

void silu_backward(std::int64_t count, const float* x, const float* dy, float* dx) {
  for_element_ranges(count, 1, [&](std::int64_t begin, std::int64_t end) {
    silu_backward_range(end - begin, x + begin, dy + begin, dx + begin);
  });
}

}  // namespace gpipe::exec::cpu
