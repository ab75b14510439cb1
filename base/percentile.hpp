// The nearest-rank percentile, which every percentile gpipe prints uses: of N
// values sorted ascending, the p-th is the value of rank ceil(p N / 100)
// (1-based, at least 1), always one of the observed values.
#pragma once

#include <span>

namespace gpipe {

// `sorted` ascending and not empty; 0 < percent <= 100.
[[nodiscard]] double nearest_rank(std::span<const double> sorted, int percent);

}  // namespace gpipe
