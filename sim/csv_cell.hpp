// One cell of the CSV files the tools write (sweeps, validations): quoted when
// it holds a comma, a quote or a newline, as RFC 4180 and Python's csv module
// read it. Partitions ("3,3,2") and skip reasons need it.
#pragma once

#include <string>

namespace gpipe::sim {

[[nodiscard]] inline std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace gpipe::sim
