// The array written element by element is the array's dump(1), to the byte.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/common/json_array_writer.hpp"

namespace gpipe::tools {
namespace {

std::string written(const nlohmann::json& array) {
  std::ostringstream out;
  JsonArrayWriter writer(out);
  for (const auto& element : array) writer.add(element);
  writer.finish();
  return out.str();
}

TEST(JsonArrayWriter, WritesWhatDumpOfTheWholeArrayWrites) {
  const auto rows = nlohmann::json::parse(R"([
    {"schedule": "gpipe", "partition": [3, 3, 2], "metrics": {"ranks": [{"rank": 0}, {"rank": 1}], "x": null},
     "empty": [], "none": {}, "reason": "two\nlines, \"quoted\""},
    7, "text", [[1, 2], []], {"status": "skipped"}
  ])");
  EXPECT_EQ(written(rows), rows.dump(1) + "\n");
  const auto one = nlohmann::json::array({nlohmann::json{{"a", 1}}});
  EXPECT_EQ(written(one), one.dump(1) + "\n");
  EXPECT_EQ(written(nlohmann::json::array()), "[]\n");
  EXPECT_EQ(nlohmann::json::array().dump(1), "[]");
}

}  // namespace
}  // namespace gpipe::tools
