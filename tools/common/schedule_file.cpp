#include "tools/common/schedule_file.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "interop/schedule_file.hpp"
#include "schedules/validate.hpp"

namespace gpipe::tools {

void refuse_beside_schedule_file(const CLI::App& cmd, const std::string& schedule_file) {
  if (schedule_file.empty()) return;
  for (const char* flag : {"--schedule", "--stages", "--stages-per-rank", "--microbatches", "--backward-order"}) {
    if (cmd.count(flag) > 0) {
      throw InputError(fmt::format("{} cannot be used with --schedule-file: the file gives the schedule, "
                                   "its stages and micro-batches",
                                   flag));
    }
  }
}

schedules::Schedule read_checked_schedule(const std::string& path) {
  schedules::Schedule schedule = interop::read_schedule_file(path);
  const auto errors = schedules::find_errors(schedule);
  if (!errors.empty()) {
    throw InputError(fmt::format("{}: {} (gpipe-sim check {} shows where)", path, errors.front().message, path));
  }
  return schedule;
}

}  // namespace gpipe::tools
