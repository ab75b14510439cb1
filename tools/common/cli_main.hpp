// The shell every gpipe command line shares: parse the flags with CLI11, run
// the chosen subcommand, and turn every error into one line on stderr with
// docs/design.md's exit status (2 for bad usage or bad input, 1 for a failure while
// running), never a crash.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace gpipe::tools {

// A subcommand and what it runs once its flags are parsed; returns the exit status.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

[[nodiscard]] int run_main(CLI::App& app, const std::vector<Subcommand>& commands, int argc,
                           char** argv);

}  // namespace gpipe::tools
