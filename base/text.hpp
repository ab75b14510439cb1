// Small text helpers the schedule readers share.
#pragma once

#include <string_view>

namespace gpipe {

// `s` without leading and trailing spaces and tabs, and without a trailing
// carriage return (a CSV written on Windows).
[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace gpipe
