// The comma-separated name lists of the command lines (`--schedule gpipe,1f1b`,
// `--recompute never,always`): each name must be one of the known values.
#pragma once

#include <string>
#include <vector>

namespace gpipe::tools {

// The names of `text` in the order given; throws InputError
// "FLAG: unknown value 'x' (known: a, b)" for a name not in `known`.
[[nodiscard]] std::vector<std::string> parse_name_list(const std::string& text, const char* flag,
                                                       const std::vector<std::string>& known);

}  // namespace gpipe::tools
