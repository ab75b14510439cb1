#include "sim/tool/units.hpp"

#include <fmt/format.h>

namespace gpipe::cli {

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

}  // namespace gpipe::cli
