// How the command lines print sizes and times: bytes in decimal units (GB =
// 1e9 bytes, as DESIGN.md counts them) and times in us, ms or s.
#pragma once

#include <cstdint>
#include <string>

namespace gpipe::cli {

[[nodiscard]] std::string format_bytes(std::int64_t bytes);  // "512 B", "3.40 MB", "1.23 GB"
[[nodiscard]] std::string format_time_us(double us);         // "850.0 us", "12.35 ms", "1.204 s"

}  // namespace gpipe::cli
