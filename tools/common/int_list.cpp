#include "tools/common/int_list.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::tools {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(' ');
  return text.substr(first, last - first + 1);
}

// Digits only: from_chars alone would take "-3", and "4x" as 4.
int parse_value(std::string_view item, std::string_view flag) {
  const std::string_view text = trim(item);
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw InputError(fmt::format("{}: '{}' is not a positive integer", flag, text));
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) {
    throw InputError(fmt::format("{}: '{}' is too large", flag, text));
  }
  if (value < 1) throw InputError(fmt::format("{}: values must be at least 1, got {}", flag, text));
  return value;
}

}  // namespace

std::vector<int> parse_int_list(std::string_view text, std::string_view flag) {
  if (trim(text).empty()) {
    throw InputError(fmt::format("{}: empty list (expected e.g. 1,2,4 or 1..8 or 1..4,8)", flag));
  }
  std::vector<int> values;
  std::int64_t count = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) throw InputError(fmt::format("{}: empty item in '{}'", flag, text));
    int first = 0;
    int last = 0;
    if (const auto dots = item.find(".."); dots != std::string_view::npos) {
      if (trim(item.substr(0, dots)).empty() || trim(item.substr(dots + 2)).empty()) {
        throw InputError(
            fmt::format("{}: range '{}' needs a start and an end, e.g. 1..8", flag, item));
      }
      first = parse_value(item.substr(0, dots), flag);
      last = parse_value(item.substr(dots + 2), flag);
      if (first > last) {
        throw InputError(
            fmt::format("{}: range '{}' is reversed (write {}..{})", flag, item, last, first));
      }
    } else {
      first = last = parse_value(item, flag);
    }
    // Counted before expanding, so `1..2000000000` fails without allocating.
    count += static_cast<std::int64_t>(last) - first + 1;
    if (count > kMaxListValues) {
      throw InputError(fmt::format("{}: more than {} values", flag, kMaxListValues));
    }
    for (std::int64_t v = first; v <= last; ++v) values.push_back(static_cast<int>(v));
  }
  std::vector<int> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    throw InputError(fmt::format("{}: {} is given more than once", flag, *dup));
  }
  return values;
}

}  // namespace gpipe::tools
