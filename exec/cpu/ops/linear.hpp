// A Linear y = x W^T + b over a batch of rows (PyTorch's layout: W is
// [out, in]), forward and backward, each a GEMM or two.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

struct LinearShape {
  std::int64_t rows = 0;  // samples x tokens
  std::int64_t in = 0;
  std::int64_t out = 0;
};

// y[rows,out] = x[rows,in] W[out,in]^T + bias[out]; bias may be null.
void linear_forward(const LinearShape& shape, const float* x, const float* w, const float* bias,
                    float* y);

// From dy[rows,out]: dx[rows,in] = dy W (overwritten; skipped when dx is null),
// dw[out,in] += dy^T x and dbias[out] += the column sums of dy (dbias may be
// null), accumulating the weight gradients over micro-batches.
void linear_backward(const LinearShape& shape, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* dbias);

}  // namespace gpipe::exec::cpu
