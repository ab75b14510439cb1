#include "sim/overlap_model.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::sim {

void validate_overlap_share(std::optional<double> share) {
  if (!share) return;
  if (!(*share >= kMinOverlapShare && *share <= 1.0)) {
    throw InputError(fmt::format("--overlap-f-b must be from {} (no gain) to 1 (perfect overlap), got {}",
                                 kMinOverlapShare, *share));
  }
}

}  // namespace gpipe::sim
