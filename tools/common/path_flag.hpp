// Flags and arguments that name a file (--profile, --schedule-file, --trace,
// --out, --json-out, FILE, ...), the same in both tools. An empty name
// (--trace '', or --out "$UNSET" in a script) names no file: it is refused
// while the flags are parsed, as bad usage, rather than read as "no file" and
// skipped in silence (a run that wrote no trace, exit 0).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace gpipe::tools {

// The check of every flag that names a file: ->check(nonempty_path()).
[[nodiscard]] CLI::Validator nonempty_path();

// Throws InputError "FLAG PATH: cannot write: why" unless `path` can be
// written, so that a typo in an output path fails before a long run, not
// after. Leaves no file behind.
void check_writable(const std::string& path, const char* flag);

}  // namespace gpipe::tools
