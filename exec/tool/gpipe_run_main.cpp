// gpipe-run: the executor's command line. Its subcommands (train, profile,
// validate) are added as they land.
#include <CLI/CLI.hpp>

#include "sim/tool/cli_main.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpipe-run: train a model through a pipeline schedule and measure it"};
  app.require_subcommand(1);
  return gpipe::cli::run_main(app, {}, argc, argv);
}
