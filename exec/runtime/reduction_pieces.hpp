// How a stage's gradients are cut for its data-parallel reduction
// (gradient_reducer.hpp), the same for every backend: each gradient tensor
// is reduced in place, in pieces of at most `bucket_elements` values (the
// simulator prices the stage's bytes in buckets of that size,
// sim/data_parallel.hpp; in place there is no copy into a bucket to pay for).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace gpipe::exec {

struct ReductionPiece {
  std::size_t tensor = 0;   // which gradient
  std::int64_t first = 0;   // its first value
  std::int64_t count = 0;   // how many
  bool operator==(const ReductionPiece&) const = default;
};

// A bucket of `bytes` in fp32 values, at least one.
[[nodiscard]] inline std::int64_t float_bucket(std::int64_t bytes) {
  return std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(sizeof(float)));
}

// The pieces of tensors of `sizes` values, tensor by tensor, each cut into
// pieces of `bucket_elements` (the last the rest); an empty tensor has none.
[[nodiscard]] inline std::vector<ReductionPiece> reduction_pieces(std::span<const std::int64_t> sizes,
                                                                  std::int64_t bucket_elements) {
  if (bucket_elements < 1) throw std::invalid_argument("a reduction bucket holds at least one value");
  std::vector<ReductionPiece> pieces;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    for (std::int64_t first = 0; first < sizes[t]; first += bucket_elements) {
      pieces.push_back({t, first, std::min(bucket_elements, sizes[t] - first)});
    }
  }
  return pieces;
}

}  // namespace gpipe::exec
