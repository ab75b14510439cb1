#include "base/percentile.hpp"

#include <algorithm>
#include <cassert>
#include <cstddef>

namespace gpipe {

double nearest_rank(std::span<const double> sorted, int percent) {
  assert(!sorted.empty() && percent > 0 && percent <= 100);
  // Integer arithmetic: ceil(percent * N / 100) without rounding error.
  const std::size_t n = sorted.size();
  const std::size_t rank = std::max<std::size_t>(1, (static_cast<std::size_t>(percent) * n + 99) / 100);
  return sorted[rank - 1];
}

}  // namespace gpipe
