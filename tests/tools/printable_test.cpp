// Error lines quote input: control bytes and invalid UTF-8 come out escaped,
// valid UTF-8 stays, and a line past 2000 bytes is cut in the middle.
#include <gtest/gtest.h>

#include <string>

#include "tools/common/printable.hpp"

namespace gpipe::tools {
namespace {

TEST(PrintableLine, EscapesControlBytesAndInvalidUtf8KeepsValidUtf8) {
  EXPECT_EQ(printable_line("plain text, 2F0"), "plain text, 2F0");
  EXPECT_EQ(printable_line("a\rb\nc\x1b[31m"), "a\\x0Db\\x0Ac\\x1B[31m");
  EXPECT_EQ(printable_line("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82");
  EXPECT_EQ(printable_line("\xff\xc3"), "\\xFF\\xC3");            // a stray byte; a cut sequence
  EXPECT_EQ(printable_line("\xc0\xaf"), "\\xC0\\xAF");            // an overlong '/'
  EXPECT_EQ(printable_line("\xed\xa0\x80"), "\\xED\\xA0\\x80");    // a UTF-16 surrogate
}

TEST(PrintableLine, CutsALongLineInTheMiddle) {
  const std::string cell(50'000'000, 'x');
  const std::string line = printable_line("s.csv: line 1 cell 2: bad action '" + cell + "'");
  EXPECT_LE(line.size(), kMaxLineBytes + 40);
  EXPECT_EQ(line.substr(0, 35), "s.csv: line 1 cell 2: bad action 'x");
  EXPECT_NE(line.find(" ... [49998035 bytes cut] ... "), std::string::npos) << line.substr(990, 60);
  EXPECT_EQ(line.back(), '\'');
}

}  // namespace
}  // namespace gpipe::tools
