#include "exec/cpu/ops/linear.hpp"

#include <algorithm>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/elementwise.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// y = bias (per row) + residual, either may be null but not both.
GPIPE_VECTOR_CLONES void seed_rows(std::int64_t rows, std::int64_t cols, const float* bias,
                                   const float* residual, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * cols;
    const float* rr = residual == nullptr ? nullptr : residual + r * cols;
    if (bias == nullptr) {
      std::copy(rr, rr + cols, yr);
    } else if (rr == nullptr) {
      std::copy(bias, bias + cols, yr);
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = bias[j] + rr[j];
    }
  }
}

}  // namespace

void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias,
                    float* y, const float* residual) {
  // Named copies, not a structured binding: the lambda below captures them
  // (clang 14, the sanitize build's compiler, cannot capture a binding).
  const std::int64_t rows = shape.rows;
  const std::int64_t in = shape.in;
  const std::int64_t out = shape.out;
  // Seed y with the bias and the residual so the GEMM adds the product in the same pass.
  const bool seeded = bias != nullptr || residual != nullptr;
  if (seeded) {
    for_element_ranges(rows, out, [&](std::int64_t begin, std::int64_t end) {
      seed_rows(end - begin, out, bias, residual == nullptr ? nullptr : residual + begin * out, y + begin * out);
    });
  }
  gemm(Transpose::no, Transpose::yes, rows, out, in, 1.0F, x, in, w, in, seeded ? 1.0F : 0.0F, y, out);
}

void add_bias_and_residual(const LinearShape& shape, const float* bias, const float* residual, float* y) {
  const std::int64_t rows = shape.rows;
  const std::int64_t out = shape.out;
  if (bias == nullptr && residual == nullptr) return;
  for_element_ranges(rows, out, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      float* yr = y + r * out;
      const float* rr = residual == nullptr ? nullptr : residual + r * out;
#pragma omp simd
      for (std::int64_t j = 0; j < out; ++j) yr[j] += (bias == nullptr ? 0.0F : bias[j]) + (rr == nullptr ? 0.0F : rr[j]);
    }
  });
}

void linear_backward_input(const LinearShape& shape, const float* w, const float* dy, float* dx) {
  const auto [rows, in, out] = shape;
  gemm(Transpose::no, Transpose::no, rows, in, out, 1.0F, dy, out, w, in, 0.0F, dx, in);
}

void linear_backward_weight(const LinearShape& shape, const float* x, const float* dy, float* dw,
                            float* dbias) {
  const auto [rows, in, out] = shape;
  gemm(Transpose::yes, Transpose::no, out, in, rows, 1.0F, dy, out, x, in, 1.0F, dw, in);
  if (dbias != nullptr) add_column_sums(rows, out, dy, dbias);
}

}  // namespace gpipe::exec::cpu
