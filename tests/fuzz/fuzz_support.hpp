// What every fuzz target shares. A parser may refuse its input with
// gpipe::InputError (docs/design.md: one clear line, exit 2); anything else that
// escapes (another exception, a crash, a sanitizer report, a timeout, memory
// past -rss_limit_mb or -malloc_limit_mb) is a finding, and libFuzzer stops
// with the input that caused it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"

namespace gpipe::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`, which may refuse the input with InputError and nothing else.
template <typename Parse>
void refusing_only_with_input_error(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
    // The expected refusal of a malformed input.
  }
}

}  // namespace gpipe::fuzz
