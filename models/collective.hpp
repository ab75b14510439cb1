// The collectives tensor and data parallelism do, named once:
// models say which ones a layer or a stage does and how many elements each
// moves, profiles/collectives.hpp prices them on a link.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpipe::models {

// Sizes follow nccl-tests' "size": an all-reduce's buffer (every rank's, in
// and out), an all-gather's gathered output, a reduce-scatter's input.
enum class Collective : std::uint8_t { all_reduce, all_gather, reduce_scatter };

// The bucket a stage's gradients are reduced in, PyTorch DDP's default
// (bucket_cap_mb = 25): what the executor reduces at once and the simulator
// prices.
inline constexpr std::int64_t kGradientBucketBytes = 25'000'000;

// "all-reduce", "all-gather", "reduce-scatter".
[[nodiscard]] std::string_view to_string(Collective collective);

}  // namespace gpipe::models
