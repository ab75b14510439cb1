#include "base/files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace gpipe {

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(fmt::format("{}: cannot read: is a directory", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
  // Read in chunks, so that a device or pipe with no end (/dev/zero) stops at the cap too.
  std::string text;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) {
      throw InputError(fmt::format("{}: larger than the {} MiB an input file may be", path.string(),
                                   kMaxInputFileBytes >> 20));
    }
  }
  return text;
}

nlohmann::json parse_json_text(std::string_view text, std::string_view origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // A syntax error, or a number past a double (1e400: out_of_range.406).
    // nlohmann's message starts with "[json.exception.parse_error.101] "; keep the rest.
    const std::string_view what = e.what();
    const auto tag_end = what.find("] ");
    throw InputError(fmt::format("{}: not valid JSON: {}", origin,
                                 tag_end == std::string_view::npos ? what : what.substr(tag_end + 2)));
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

std::ofstream open_for_writing(const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
  return out;
}

void finish_writing(std::ofstream& out, const std::filesystem::path& path) {
  out.flush();
  if (!out) throw InputError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
}

void write_text_file(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out = open_for_writing(path);
  out << text;
  finish_writing(out, path);
}

}  // namespace gpipe
