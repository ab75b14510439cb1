#include "tools/common/json_array_writer.hpp"

#include <string>

namespace gpipe::tools {

void JsonArrayWriter::add(const nlohmann::json& element) {
  // Inside the array every line of the element sits one space further in. A
  // dump escapes the newlines within strings, so each newline is layout.
  const std::string text = element.dump(1);
  std::string indented;
  indented.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    indented += c;
    if (c == '\n') indented += ' ';
  }
  out_ << (empty_ ? "[\n " : ",\n ") << indented;
  empty_ = false;
}

void JsonArrayWriter::finish() { out_ << (empty_ ? "[]" : "\n]") << "\n"; }

}  // namespace gpipe::tools
