// The LIST values of the command lines (docs/design.md "Command lines"): positive
// integers as a comma-separated list of single values and inclusive ranges,
// e.g. `1,2,4`, `1..64`, `1..4,8,16`. Shared by every flag that takes a LIST
// (--micro-batch-sizes, --stages, --microbatches, ...).
#pragma once

#include <cstddef>

#include <string_view>
#include <vector>

namespace gpipe::tools {

// The most values one LIST may expand to, so that a typo like `1..100000000`
// fails at once instead of running for hours.
inline constexpr int kMaxListValues = 1'000'000;
// The most micro-batch sizes one profile is measured or computed at.
inline constexpr std::size_t kMaxProfiledSizes = 256;

// The values of `text` in the order given (ranges ascending). Spaces around an
// item are allowed. Throws InputError starting with `flag` ("--stages: ...")
// for an empty list or item, a value that is not a positive integer that fits
// an int, a reversed range (`8..1`), a value given twice, or more than
// kMaxListValues values.
[[nodiscard]] std::vector<int> parse_int_list(std::string_view text, std::string_view flag);

}  // namespace gpipe::tools
