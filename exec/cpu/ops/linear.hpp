// A Linear y = x W^T + b over a batch of rows (PyTorch's layout: W is
// [out, in]), forward and backward, a GEMM each (and the bias's sums).
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

struct LinearShape {
  std::int64_t rows = 0;  // samples x tokens
  std::int64_t in = 0;
  std::int64_t out = 0;
};

// y[rows,out] = x[rows,in] W[out,in]^T + bias[out] + residual[rows,out]; bias
// and residual may be null. The residual is added in the pass that seeds y
// with the bias, before the GEMM adds the product: a block's skip connection
// costs no pass over y of its own.
void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias,
                    float* y, const float* residual = nullptr);

// y[rows,out] += bias[out] + residual[rows,out] (either may be null): what
// linear_forward adds, added after the product instead (a tensor-parallel
// row-parallel Linear sums its parts' products over the group first).
void add_bias_and_residual(const LinearShape& shape, const float* bias, const float* residual, float* y);

// The backward in its two halves, which a split backward runs as I and W (a
// full backward runs both, the input half first):
// the input gradient dx[rows,in] = dy[rows,out] W (overwritten);
void linear_backward_input(const LinearShape& shape, const float* w, const float* dy, float* dx);
// the weight gradients dw[out,in] += dy^T x and dbias[out] += the column sums
// of dy (dbias may be null), accumulating over micro-batches.
void linear_backward_weight(const LinearShape& shape, const float* x, const float* dy, float* dw,
                            float* dbias);

}  // namespace gpipe::exec::cpu
