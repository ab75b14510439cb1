// A JSON array written element by element to a stream, byte for byte as
// nlohmann's dump(1) of the whole array: a command line that writes a
// million rows as they come (gpipe-sim sweep --json-out) never holds them all.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

namespace gpipe::tools {

class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(std::ostream& out) : out_(out) {}
  void add(const nlohmann::json& element);
  // The closing bracket and a newline; "[]" for no element.
  void finish();

 private:
  std::ostream& out_;
  bool empty_ = true;
};

}  // namespace gpipe::tools
