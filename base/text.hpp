// Small text helpers the readers share.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace gpipe {

// `s` without leading and trailing spaces and tabs, and without a trailing
// carriage return (a CSV written on Windows).
[[nodiscard]] inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Whether `a` and `b` are equal but for the case of ASCII letters (a device's
// or a cluster's key as a user types it).
[[nodiscard]] inline bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace gpipe
