// How the command lines print sizes and times: bytes in decimal units (GB =
// 1e9 bytes, as docs/design.md counts them) and times in us, ms or s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpipe::tools {

[[nodiscard]] std::string format_bytes(std::int64_t bytes);  // "512 B", "3.40 MB", "1.23 GB"
[[nodiscard]] std::string format_time_us(double us);         // "850.0 us", "12.35 ms", "1.204 s"

// "80GB", "80e9", "512MiB", "1.5 TB": a size in bytes; throws InputError naming `flag`.
[[nodiscard]] std::int64_t parse_bytes(std::string_view text, std::string_view flag);
// "500us", "2.5ms", "1s", "750" (us): a positive time in us; throws InputError naming `flag`.
[[nodiscard]] double parse_time_us(std::string_view text, std::string_view flag);

}  // namespace gpipe::tools
