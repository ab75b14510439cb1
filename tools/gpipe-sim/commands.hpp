// The subcommands of gpipe-sim, one file each; gpipe_sim_app.cpp wires them up.
#pragma once

#include "tools/common/cli_main.hpp"
#include "tools/gpipe-sim/gpipe_sim.hpp"

namespace gpipe::tools {

[[nodiscard]] Subcommand add_schedule_command(CLI::App& app);
[[nodiscard]] Subcommand add_check_command(CLI::App& app);
[[nodiscard]] Subcommand add_run_command(CLI::App& app);
[[nodiscard]] Subcommand add_sweep_command(CLI::App& app);
[[nodiscard]] Subcommand add_diff_command(CLI::App& app);
[[nodiscard]] Subcommand add_profile_command(CLI::App& app);
[[nodiscard]] Subcommand add_plan_command(CLI::App& app);

}  // namespace gpipe::tools
