// gpipe-sim check FILE: validate a schedule in its JSON or CSV form. A valid
// file exits 0 with a summary; an invalid one prints the grid marking where it
// fails on stdout, one line naming the fault on stderr, and exits 2.
#include <iostream>
#include <memory>

#include "base/error.hpp"
#include "interop/schedule_file.hpp"
#include "schedules/grid_printer.hpp"
#include "schedules/ir_text.hpp"
#include "schedules/validate.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/gpipe-sim/commands.hpp"

namespace gpipe::tools {
namespace {

using namespace gpipe::schedules;

int run_check(const std::string& file) {
  const Schedule schedule = interop::read_schedule_file(file);
  std::size_t total = 0;
  const auto errors = find_errors(schedule, &total);
  if (errors.empty()) {
    std::cout << file << ": valid (" << summary(schedule) << ", " << schedule.total_actions()
              << " actions)\n";
    return 0;
  }
  const ScheduleError& first = errors.front();
  // The grid needs a well-formed header; for a broken header the message alone says it.
  if (first.kind != ScheduleError::Kind::bad_header && !grid_too_large(schedule)) {
    std::cout << format_grid(schedule, first.where);
  }
  std::string more;
  if (total > 1) more = " (and " + std::to_string(total - 1) + " more)";
  throw InputError(file + ": " + first.message + more);
}

}  // namespace

Subcommand add_check_command(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Validate a schedule file (IR JSON or CSV): missing or duplicated actions, "
               "backward before forward, unmatched send/recv, deadlocks");
  cmd->add_option("FILE", *file, "Schedule file, IR JSON or CSV")->required()->check(nonempty_path());
  return {cmd, [file] { return run_check(*file); }};
}

}  // namespace gpipe::tools
