#include "exec/cpu/ops/elementwise.hpp"

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// Columns [0, cols) of rows `stride` apart.
GPIPE_VECTOR_CLONES void add_column_sums_band(std::int64_t rows, std::int64_t cols, std::int64_t stride,
                                              const float* x, float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) sums[j] += row[j];
  }
}

}  // namespace

void add_column_sums(std::int64_t rows, std::int64_t cols, const float* x, float* sums) {
  // By bands of columns, so that each sum is one part's alone.
  for_element_ranges(cols, rows, [&](std::int64_t begin, std::int64_t end) {
    add_column_sums_band(rows, end - begin, cols, x + begin, sums + begin);
  });
}

}  // namespace gpipe::exec::cpu
