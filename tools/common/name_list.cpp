#include "tools/common/name_list.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace gpipe::tools {

std::vector<std::string> parse_name_list(const std::string& text, const char* flag,
                                         const std::vector<std::string>& known,
                                         const std::vector<std::string>& also) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, end - start);
    if (std::find(known.begin(), known.end(), name) == known.end() &&
        std::find(also.begin(), also.end(), name) == also.end()) {
      throw InputError(fmt::format("{}: unknown value '{}' (known: {})", flag, name, fmt::join(known, ", ")));
    }
    names.push_back(name);
    start = end + 1;
  }
  return names;
}

}  // namespace gpipe::tools
