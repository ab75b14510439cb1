// A bias gradient as the column sums of an output gradient: a SIMD loop (see
// vector_math.hpp; at -O2, GCC does not vectorize it without being told),
// split over the rank's team by bands of columns.
#pragma once

#include <cstdint>

namespace gpipe::exec::cpu {

// sums[j] += x[r][j] over the rows of x[rows, cols].
void add_column_sums(std::int64_t rows, std::int64_t cols, const float* x, float* sums);

}  // namespace gpipe::exec::cpu
