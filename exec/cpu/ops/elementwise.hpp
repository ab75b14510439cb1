// Elementwise sums the layers share: a residual added in place, and a bias
// gradient as the column sums of an output gradient. SIMD loops (see
// vector_math.hpp): at -O2, GCC vectorizes neither without being told.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// to[i] += from[i] for i < count.
void add_into(std::int64_t count, const float* from, float* to);

// sums[j] += x[r][j] over the rows of x[rows, cols].
void add_column_sums(std::int64_t rows, std::int64_t cols, const float* x, float* sums);

}  // namespace gpipe::exec::cpu
