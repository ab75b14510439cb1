// gpipe-run: the executor's command line. Train a model through a pipeline
// schedule on CPU threads and measure it, profile its layers for the
// simulator, and validate the simulator against real runs.
#include "exec/tool/commands.hpp"
#include "exec/tool/memory_policy.hpp"

int main(int argc, char** argv) {
  gpipe::cli::keep_freed_memory();  // before any thread: the same allocator state for every run
  CLI::App app{
      "gpipe-run: train a model through a pipeline schedule (GPipe, 1F1B), one thread per rank,\n"
      "and measure it; profile its layers for gpipe-sim; validate gpipe-sim against real runs.",
      "gpipe-run"};
  app.require_subcommand(1);
  const std::vector<gpipe::cli::Subcommand> commands = {
      gpipe::cli::add_train_command(app),
      gpipe::cli::add_profile_run_command(app),
      gpipe::cli::add_validate_command(app),
  };
  return gpipe::cli::run_main(app, commands, argc, argv);
}
