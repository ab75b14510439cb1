// A trace torch wrote compressed (export_chrome_trace("x.json.gz")) reads as
// its text; bytes that are not gzip pass through untouched; a damaged or
// cut-short stream is one InputError naming the origin.
#include <gtest/gtest.h>

#include <zlib.h>

#include <string>

#include "interop/gzip_text.hpp"
#include "tests/error_of.hpp"

namespace gpipe::interop {
namespace {

// gzip's own framing (16 + MAX_WBITS), as Python's gzip module writes it.
std::string gzipped(const std::string& text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, text.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

TEST(GzipText, InflatesGzipAndPassesOtherBytesThrough) {
  std::string text = R"({"traceEvents": [)";
  for (int i = 0; i < 20000; ++i) text += R"({"ph": "X", "name": "aten::mm", "ts": )" + std::to_string(i) + "},";
  text += "{}]}";
  const std::string packed = gzipped(text);
  ASSERT_LT(packed.size(), text.size() / 10);  // many 64 KiB chunks inflated, not one
  EXPECT_EQ(inflate_if_gzipped(packed, "t.json.gz"), text);
  EXPECT_EQ(inflate_if_gzipped(text, "t.json"), text);
  EXPECT_EQ(inflate_if_gzipped("", "empty"), "");
  EXPECT_EQ(inflate_if_gzipped("\x1f", "one byte"), "\x1f");
}

TEST(GzipText, ADamagedOrCutShortStreamIsOneError) {
  const std::string packed = gzipped(std::string(100000, 'x') + "end");
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)inflate_if_gzipped(packed.substr(0, packed.size() / 2), "cut.gz"); }),
            "cut.gz: not valid gzip: cut short");
  std::string damaged = packed;
  damaged[3] = '\xff';  // reserved flag bits set: not a gzip header zlib accepts
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)inflate_if_gzipped(damaged, "bad.gz"); }).rfind("bad.gz: not valid gzip: ", 0),
            0U);
}

}  // namespace
}  // namespace gpipe::interop
