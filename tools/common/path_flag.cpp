#include "tools/common/path_flag.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::tools {

CLI::Validator nonempty_path() {
  return CLI::Validator(
      [](const std::string& path) -> std::string {
        return path.empty() ? "an empty path names no file" : "";
      },
      "", "nonempty path");
}

void check_writable(const std::string& path, const char* flag) {
  std::error_code ignored;
  const bool existed = std::filesystem::exists(path, ignored);
  {
    std::ofstream probe(path, std::ios::app);  // appends nothing: an existing file is untouched
    if (!probe) throw InputError(fmt::format("{} {}: cannot write: {}", flag, path, std::strerror(errno)));
  }
  if (!existed) std::filesystem::remove(path, ignored);
}

}  // namespace gpipe::tools
