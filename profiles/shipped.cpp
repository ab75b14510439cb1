#include "profiles/shipped.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace gpipe::profiles {

std::filesystem::path shipped_profile_dir() {
  if (const char* dir = std::getenv("GPIPE_PROFILE_DIR"); dir != nullptr && *dir != '\0') return dir;
  return GPIPE_PROFILE_DIR;
}

std::vector<std::string> shipped_profile_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(shipped_profile_dir(), ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path resolve_profile(std::string_view name_or_path) {
  const std::filesystem::path given(name_or_path);
  std::error_code ec;
  if (std::filesystem::exists(given, ec)) return given;
  const auto shipped = shipped_profile_dir() / (std::string(name_or_path) + ".json");
  if (given.parent_path().empty() && std::filesystem::exists(shipped, ec)) return shipped;
  throw InputError(fmt::format("--profile {}: no such file, and no shipped profile of that name "
                               "(shipped: {})",
                               name_or_path, fmt::join(shipped_profile_names(), ", ")));
}

}  // namespace gpipe::profiles
