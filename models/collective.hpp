// The collectives tensor and data parallelism do (issue 26), named once:
// models say which ones a layer or a stage does and how many elements each
// moves, profiles/collectives.hpp prices them on a link.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpipe::models {

// Sizes follow nccl-tests' "size": an all-reduce's buffer (every rank's, in
// and out), an all-gather's gathered output, a reduce-scatter's input.
enum class Collective : std::uint8_t { all_reduce, all_gather, reduce_scatter };

// "all-reduce", "all-gather", "reduce-scatter".
[[nodiscard]] std::string_view to_string(Collective collective);

}  // namespace gpipe::models
