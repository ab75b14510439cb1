// The comma-separated name lists of the command lines (`--schedule gpipe,1f1b`,
// `--recompute never,stage`): each name must be one of the known values.
#pragma once

#include <string>
#include <vector>

namespace gpipe::tools {

// The names of `text` in the order given; throws InputError
// "FLAG: unknown value 'x' (known: a, b)" for a name neither in `known` nor
// in `also` (former names still taken, and not listed).
[[nodiscard]] std::vector<std::string> parse_name_list(const std::string& text, const char* flag,
                                                       const std::vector<std::string>& known,
                                                       const std::vector<std::string>& also = {});

}  // namespace gpipe::tools
