#include "tools/common/cli_main.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>

#include "base/error.hpp"
#include "tools/common/printable.hpp"

namespace gpipe::tools {
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
// Printable and bounded (tools/common/printable.hpp): a line may quote hostile input.
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

// The program's name for on_terminate(), which takes no arguments: a fixed
// array, which no later call can leave dangling.
char terminating_program[64] = "gpipe";

// Writes `text` to stderr without locks or allocation: the one thing left to
// do where a thread is being terminated, perhaps for want of memory.
void write_stderr(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// An exception that escapes a thread of a library (one that carries nothing
// back; a sweep's workers now hand theirs to the main thread) or a noexcept
// function ends in std::terminate: it still ends in one line, with exit
// status 1, as it would on the main thread. Anything else keeps the default
// (abort, core dump).
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void on_terminate() noexcept {
  if (const std::exception_ptr escaped = std::current_exception()) {
    std::string_view what = "failed: out of memory";
    std::string detail;  // built only for an exception other than bad_alloc
    try {
      std::rethrow_exception(escaped);
    } catch (const std::bad_alloc&) {
    } catch (const std::exception& e) {
      detail = "internal error: " + printable_line(e.what());
      what = detail;
    } catch (...) {
      what = "internal error: unknown exception";
    }
    write_stderr(terminating_program);
    write_stderr(": ");
    write_stderr(what);
    write_stderr("\n");
    std::_Exit(1);
  }
  if (previous_terminate != nullptr) previous_terminate();
  std::abort();
}

}  // namespace

int run_main(CLI::App& app, const std::vector<Subcommand>& commands, int argc, char** argv) {
  const std::size_t length = app.get_name().copy(terminating_program, sizeof terminating_program - 1);
  terminating_program[length] = '\0';
  if (std::get_terminate() != on_terminate) previous_terminate = std::set_terminate(on_terminate);
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

}  // namespace gpipe::tools
