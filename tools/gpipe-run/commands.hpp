// The subcommands of gpipe-run, one file each; gpipe_run_app.cpp wires them up.
#pragma once

#include "profiles/profile.hpp"
#include "tools/common/cli_main.hpp"
#include "tools/gpipe-run/gpipe_run.hpp"

namespace gpipe::tools {

[[nodiscard]] Subcommand add_train_command(CLI::App& app);
[[nodiscard]] Subcommand add_profile_run_command(CLI::App& app);
[[nodiscard]] Subcommand add_validate_command(CLI::App& app);
[[nodiscard]] Subcommand add_infer_command(CLI::App& app);

// The profiler's progress on stderr (profile, validate): a bar over the
// passes (on a terminal only), then one line per layer with its times.
void report_profiler_pass(int pass, int passes);
void report_profiled_layer(int index, int count, const profiles::LayerProfile& layer);

}  // namespace gpipe::tools
