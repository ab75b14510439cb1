#include "exec/cpu/ops/elementwise.hpp"

#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

GPIPE_VECTOR_CLONES void add_into(std::int64_t count, const float* from, float* to) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) to[i] += from[i];
}

GPIPE_VECTOR_CLONES void add_column_sums(std::int64_t rows, std::int64_t cols, const float* x,
                                         float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) sums[j] += row[j];
  }
}

}  // namespace gpipe::exec::cpu
