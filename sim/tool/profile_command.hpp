// gpipe-sim profile: write an analytic profile (profiles/analytic.hpp) of a
// model SPEC on a named device, for simulating hardware that is not at hand.
#pragma once

#include "sim/tool/cli_main.hpp"

namespace gpipe::cli {

[[nodiscard]] Subcommand add_profile_command(CLI::App& app);

}  // namespace gpipe::cli
