// gpipe-run's whole command line as one call, for its main and the argv fuzz
// target. Without CLI11, so that what includes only this compiles in a moment.
#pragma once

namespace gpipe::tools {

// Parses argv, runs the subcommand, returns the exit status.
[[nodiscard]] int gpipe_run_main(int argc, char** argv);

}  // namespace gpipe::tools
