#include "tools/common/printable.hpp"

#include <fmt/format.h>

namespace gpipe::tools {
namespace {

// The length of the valid UTF-8 sequence at text[i] (1 to 4), or 0.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  std::size_t n = 0;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) min_second = 0xA0;  // no overlong forms
    if (b == 0xED) max_second = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) min_second = 0x90;
    if (b == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += static_cast<char>(b);
      ++i;
    } else if (const std::size_t n = b >= 0x80 ? utf8_length(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02X}", b);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string printable_line(std::string_view text) {
  if (text.size() <= kMaxLineBytes) return escaped(text);
  // Keep the start (which names the file and field) and the end; cut the
  // middle, which is where a quoted cell runs on.
  const std::size_t keep = kMaxLineBytes / 2;
  return escaped(text.substr(0, keep)) + fmt::format(" ... [{} bytes cut] ... ", text.size() - 2 * keep) +
         escaped(text.substr(text.size() - keep));
}

}  // namespace gpipe::tools
