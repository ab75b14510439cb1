// gpipe-run's command line as a function: its subcommands wired into one
// CLI::App. main() calls it; so does the argv-level fuzz target
// (tests/fuzz/gpipe_run_argv_fuzz.cpp), in process.
#include "tools/gpipe-run/commands.hpp"

namespace gpipe::tools {

int gpipe_run_main(int argc, char** argv) {
  CLI::App app{
      "gpipe-run: train a model through a pipeline schedule (GPipe, 1F1B, interleaved, zero-bubble,\n"
      "DualPipeV, or a schedule file) on CPU threads, MPI processes or a GPU's SM partitions, and\n"
      "measure it; serve an inference stream through the stages; profile its layers for gpipe-sim;\n"
      "validate gpipe-sim against real runs.",
      "gpipe-run"};
  app.require_subcommand(1);
  const std::vector<Subcommand> commands = {
      add_train_command(app),
      add_profile_run_command(app),
      add_validate_command(app),
      add_infer_command(app),
  };
  return run_main(app, commands, argc, argv);
}

}  // namespace gpipe::tools
