#include "exec/cpu/ops/linear.hpp"

#include <algorithm>

#include "exec/cpu/ops/elementwise.hpp"
#include "exec/cpu/ops/gemm.hpp"

namespace gpipe::exec::cpu {

void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias,
                    float* y) {
  const auto [rows, in, out] = shape;
  // Seed y with the bias so the GEMM adds the product in the same pass.
  if (bias != nullptr) {
    for (std::int64_t r = 0; r < rows; ++r) std::copy(bias, bias + out, y + r * out);
  }
  gemm(Transpose::no, Transpose::yes, rows, out, in, 1.0F, x, in, w, in,
       bias != nullptr ? 1.0F : 0.0F, y, out);
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
