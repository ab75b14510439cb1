#include "cli/cli_main.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>

#include "cli/printable.hpp"
#include "schedules/error.hpp"

namespace gpipe::cli {
namespace {

// The name the user typed, e.g. "gpipe-sim check", for the front of error lines.
std::string command_name(const CLI::App& app, const std::vector<Subcommand>& commands) {
  for (const auto& c : commands) {
    if (c.app->parsed()) return app.get_name() + " " + c.app->get_name();
  }
  return app.get_name();
}

// CLI11 reports an unknown first word only as "a subcommand is required".
std::string unknown_command(const std::vector<Subcommand>& commands, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  std::string known;
  for (const auto& c : commands) {
    if (c.app->get_name() == argv[1]) return {};
    known += (known.empty() ? "" : ", ") + c.app->get_name();
  }
  return std::string("unknown command '") + argv[1] + "' (commands: " + known + ")";
}

// One line on stderr in one write, so that the lines of processes sharing a
// terminal (under mpirun) do not interleave.
// Printable and bounded (cli/printable.hpp): a line may quote hostile input.
void say(const std::string& line) { std::cerr << printable_line(line) + "\n" << std::flush; }

// Under a launcher (mpirun, srun, torchrun) every process parses the same
// flags and plans the same run, so a bad input fails in all of them alike:
// only the first process says so, and the others exit with the same status a
// second later, since a launcher ends the whole job at the first exit.
bool echoes_another_process() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0' && std::string_view(value) != "0") {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return true;
    }
    if (value != nullptr && *value != '\0') return false;
  }
  return false;
}

}  // namespace

int run_main(CLI::App& app, const std::vector<Subcommand>& commands, int argc, char** argv) {
  if (const std::string why = unknown_command(commands, argc, argv); !why.empty()) {
    say(app.get_name() + ": error: " + why + " (see --help)");
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (!echoes_another_process()) say(command_name(app, commands) + ": error: " + e.what() + " (see --help)");
    return 2;
  }
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    say(app.get_name() + ": error: no command given (see --help)");
    return 2;
  } catch (const InputError& e) {
    if (!echoes_another_process()) say(command_name(app, commands) + ": error: " + e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Memory is exhausted: written without building a string.
    std::fputs(app.get_name().c_str(), stderr);
    std::fputs(": failed: out of memory\n", stderr);
    return 1;
  } catch (const RunError& e) {
    say(command_name(app, commands) + ": failed: " + e.what());
    return 1;
  } catch (const std::exception& e) {
    say(command_name(app, commands) + ": internal error: " + e.what());
    return 1;
  }
}

}  // namespace gpipe::cli
