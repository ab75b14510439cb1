#include "tools/common/units.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::tools {

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1'000) return fmt::format("{} B", bytes);
  if (bytes < 1'000'000) return fmt::format("{:.2f} kB", b / 1e3);
  if (bytes < 1'000'000'000) return fmt::format("{:.2f} MB", b / 1e6);
  return fmt::format("{:.2f} GB", b / 1e9);
}

std::string format_time_us(double us) {
  if (us < 1e3) return fmt::format("{:.1f} us", us);
  if (us < 1e6) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.3f} s", us / 1e6);
}

std::int64_t parse_bytes(std::string_view text, std::string_view flag) {
  const std::string s(text);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  constexpr std::array<std::pair<std::string_view, double>, 10> kUnits = {{
      {"", 1}, {"B", 1}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}}};
  for (const auto& [name, scale] : kUnits) {
    if (end != s.c_str() && unit == name && std::isfinite(value) && value > 0 && value * scale < 9e18) {
      return std::llround(value * scale);
    }
  }
  throw InputError(fmt::format("{} '{}': expected a positive size such as 80GB, 512MiB or 8e10",
                               flag, text));
}

double parse_time_us(std::string_view text, std::string_view flag) {
  const std::string s(text);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  constexpr std::array<std::pair<std::string_view, double>, 5> kUnits = {
      {{"", 1}, {"ns", 1e-3}, {"us", 1}, {"ms", 1e3}, {"s", 1e6}}};
  for (const auto& [name, scale] : kUnits) {
    if (end != s.c_str() && unit == name && std::isfinite(value) && value > 0 && value * scale < 1e15) {
      return value * scale;
    }
  }
  throw InputError(fmt::format("{} '{}': expected a positive time such as 500us, 2.5ms or 1s (a bare number is us)",
                               flag, text));
}

}  // namespace gpipe::tools
