// What an error line may carry of the input it quotes: printable text of a
// bounded length. A line can quote a cell, a name or a path straight from a
// hostile file; a 50 MB cell, a raw carriage return or bytes that are not
// UTF-8 must not reach the terminal as they are.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpipe::tools {

// The longest error line printed, in bytes; the middle of a longer one is cut.
inline constexpr std::size_t kMaxLineBytes = 2000;

// `text` with control characters (CR, LF, ESC, ...) and bytes that are not
// valid UTF-8 written as \xHH, valid UTF-8 kept, and cut in the middle
// ("... [N bytes cut] ...") past kMaxLineBytes.
[[nodiscard]] std::string printable_line(std::string_view text);

}  // namespace gpipe::tools
