// A text file that may be gzip-compressed, as the PyTorch profiler writes a
// trace whose name ends in .gz (export_chrome_trace("trace.json.gz")): the
// compressed form is recognised by its magic bytes, not its name, and
// inflated with zlib.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gpipe::interop {

// The file's text, inflated when it is gzip (1f 8b). Throws InputError
// "FILE: cannot read: why" (base/files.hpp), "FILE: not valid gzip: why" for
// a damaged or cut-short stream, and "FILE: larger than the 256 MiB an input
// file may be" past the cap once inflated.
[[nodiscard]] std::string read_maybe_gzipped_text(const std::filesystem::path& path);

// The same on bytes already read; `origin` names them in errors.
[[nodiscard]] std::string inflate_if_gzipped(std::string bytes, std::string_view origin);

}  // namespace gpipe::interop
