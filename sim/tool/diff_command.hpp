// gpipe-sim diff: compare a predicted trace with a measured one (sim/diff.hpp).
// Declared apart from commands.hpp so that it can be registered on its own.
#pragma once

#include "sim/tool/cli_main.hpp"

namespace gpipe::cli {

[[nodiscard]] Subcommand add_diff_command(CLI::App& app);

}  // namespace gpipe::cli
