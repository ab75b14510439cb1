// The unbalanced family: mlp blocks whose inner width ramps from H to 8H with
// depth, so that the partitioner has something to balance (families.hpp).
#include <cassert>

#include <fmt/format.h>

#include "models/families.hpp"

namespace gpipe::models {

std::int64_t unbalanced_ffn_width(int block, int layers, int hidden) {
  assert(block >= 0 && block < layers && hidden >= 1);
  if (layers == 1) return hidden;
  // Integer ramp: 1 at block 0, 8 at block L-1, non-decreasing in between.
  const std::int64_t multiplier = 1 + (7 * static_cast<std::int64_t>(block)) / (layers - 1);
  return multiplier * hidden;
}

Model build_unbalanced(int layers, int hidden) {
  return build_residual_mlp("unbalanced", layers, hidden, [layers, hidden](int block) {
    return unbalanced_ffn_width(block, layers, hidden);
  });
}

}  // namespace gpipe::models
