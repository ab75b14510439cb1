// Reading and writing the files the tools exchange, with errors that name the
// file: every tool that opens a schedule, profile or trace goes through here
// (a schedule file of either form: interop/schedule_file.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gpipe {

// The largest input file read: 256 MiB, far past any schedule, profile or
// trace of a real run, and short of what a machine must not be made to hold.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;

// Throws InputError("FILE: cannot read: <reason>") when the file cannot be
// read, and "FILE: larger than the 256 MiB an input file may be" past the cap.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);
// Throws InputError("ORIGIN: not valid JSON: <where>") for malformed JSON,
// including a number past a double (1e400).
[[nodiscard]] nlohmann::json parse_json_text(std::string_view text, std::string_view origin);
// read_text_file, then parse_json_text naming the file.
[[nodiscard]] nlohmann::json read_json_file(const std::filesystem::path& path);
// Throws InputError("FILE: cannot write: <reason>").
void write_text_file(const std::filesystem::path& path, std::string_view text);
// The same for a file written piece by piece: open (truncating), write to the
// stream, then finish (flush); each throws that InputError on failure.
[[nodiscard]] std::ofstream open_for_writing(const std::filesystem::path& path);
void finish_writing(std::ofstream& out, const std::filesystem::path& path);

}  // namespace gpipe
