#include "interop/gzip_text.hpp"

#include <zlib.h>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/files.hpp"

namespace gpipe::interop {

std::string inflate_if_gzipped(std::string bytes, std::string_view origin) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return bytes;
  }
  z_stream stream{};
  // 16 + MAX_WBITS: a gzip header and trailer, not a raw zlib stream.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw InternalError("zlib: inflateInit2 failed");
  stream.next_in = reinterpret_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char chunk[1 << 16];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string why = status == Z_BUF_ERROR ? "cut short" : (stream.msg ? stream.msg : "damaged");
      inflateEnd(&stream);
      throw InputError(fmt::format("{}: not valid gzip: {}", origin, why));
    }
    out.append(chunk, sizeof chunk - stream.avail_out);
    if (out.size() > kMaxInputFileBytes) {
      inflateEnd(&stream);
      throw InputError(fmt::format("{}: larger than the {} MiB an input file may be", origin, kMaxInputFileBytes >> 20));
    }
  }
  inflateEnd(&stream);
  return out;
}

std::string read_maybe_gzipped_text(const std::filesystem::path& path) {
  return inflate_if_gzipped(read_text_file(path), path.string());
}

}  // namespace gpipe::interop
