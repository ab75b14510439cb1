#include "cli/cli_main.hpp"

#include <exception>
#include <iostream>
#include <string>

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

}  // namespace

int run_main(CLI::App& app, const std::vector<Subcommand>& commands, int argc, char** argv) {
  if (const std::string why = unknown_command(commands, argc, argv); !why.empty()) {
    std::cerr << app.get_name() << ": error: " << why << " (see --help)\n";
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
    std::cerr << command_name(app, commands) << ": error: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    std::cerr << app.get_name() << ": error: no command given (see --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << command_name(app, commands) << ": error: " << e.what() << "\n";
    return 2;
  } catch (const RunError& e) {
    std::cerr << command_name(app, commands) << ": failed: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << command_name(app, commands) << ": internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpipe::cli
