// A schedule file in either of its forms: the IR's JSON (schedules/ir_json.hpp)
// or torch's CSV (interop/torch_csv.hpp), told apart by the first character.
#pragma once

#include <filesystem>
#include <string_view>

#include "schedules/schedule.hpp"

namespace gpipe::interop {

// Reads a schedule in its JSON or CSV form: JSON when the file starts with '{'
// (after white space), CSV otherwise. The CSV's name is the file's stem.
[[nodiscard]] schedules::Schedule read_schedule_file(const std::filesystem::path& path);
// The same from text already read; `name` is the CSV's schedule name.
[[nodiscard]] schedules::Schedule schedule_from_text(std::string_view text, std::string_view origin,
                                                     std::string_view name);

}  // namespace gpipe::interop
