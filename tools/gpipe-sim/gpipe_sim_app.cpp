// gpipe-sim's command line as a function: its subcommands wired into one
// CLI::App. main() calls it; so does the argv-level fuzz target
// (tests/fuzz/gpipe_sim_argv_fuzz.cpp), in process.
#include "tools/gpipe-sim/commands.hpp"

namespace gpipe::tools {

int gpipe_sim_main(int argc, char** argv) {
  CLI::App app{
      "gpipe-sim: pipeline-parallel schedules (GPipe, 1F1B, interleaved, zero-bubble, DualPipeV):\n"
      "print and check the schedule IR, predict step time, bubble and memory from per-layer costs,\n"
      "sweep K x M, plan a cluster (tensor, pipeline and data parallelism), and diff a prediction\n"
      "against a measured trace.",
      "gpipe-sim"};
  app.require_subcommand(1);
  const std::vector<Subcommand> commands = {
      add_schedule_command(app), add_check_command(app), add_run_command(app),
      add_sweep_command(app),    add_diff_command(app),  add_profile_command(app),
      add_plan_command(app),
  };
  return run_main(app, commands, argc, argv);
}

}  // namespace gpipe::tools
