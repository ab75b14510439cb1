// The additive pieces of the layers on the device: a Linear's bias (added
// after the cuBLAS GEMM, whose output has no bias term here) and its gradient
// (column sums of dy, accumulated like exec/cpu/ops/linear.cpp's dbias), and the
// residual add of the blocks. Device pointers; rows are row-major [rows, width].
#pragma once

#include <cstdint>

#include "exec/cuda/kernels/launch.hpp"

namespace gpipe::exec::cuda::kernels {

// y[r, j] += bias[j].
void bias_add(std::int64_t rows, std::int64_t width, const float* bias, float* y, StreamHandle stream);

// dbias[j] += sum_r dy[r, j] (deterministic column reduction).
void bias_backward(std::int64_t rows, std::int64_t width, const float* dy, float* dbias,
                   StreamHandle stream);

// out[i] = a[i] + b[i]; out may alias a or b (out == a is the in-place residual add).
void residual_add(std::int64_t count, const float* a, const float* b, float* out, StreamHandle stream);

}  // namespace gpipe::exec::cuda::kernels
