#include "interop/schedule_file.hpp"

#include "base/files.hpp"
#include "interop/torch_csv.hpp"
#include "schedules/ir_json.hpp"

namespace gpipe::interop {

schedules::Schedule read_schedule_file(const std::filesystem::path& path) {
  return schedule_from_text(read_text_file(path), path.string(), path.stem().string());
}

schedules::Schedule schedule_from_text(std::string_view text, std::string_view origin, std::string_view name) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    return schedules::schedule_from_json(parse_json_text(text, origin), origin);
  }
  return schedule_from_csv(text, origin, name);
}

}  // namespace gpipe::interop
