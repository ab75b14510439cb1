// gpipe-sim: print and check schedules; predict, sweep and diff pipeline runs.
#include "sim/tool/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "gpipe-sim: pipeline-parallel schedules (GPipe, 1F1B): print and check the schedule IR,\n"
      "and predict step time, bubble and memory from per-layer costs.",
      "gpipe-sim"};
  app.require_subcommand(1);
  const std::vector<gpipe::cli::Subcommand> commands = {
      gpipe::cli::add_schedule_command(app),
      gpipe::cli::add_check_command(app),
      gpipe::cli::add_run_command(app),
      gpipe::cli::add_sweep_command(app),
      gpipe::cli::add_diff_command(app),
      gpipe::cli::add_profile_command(app),
  };
  return gpipe::cli::run_main(app, commands, argc, argv);
}
