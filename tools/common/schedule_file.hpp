// `--schedule-file F`, as every command that takes one reads it (gpipe-sim
// run and sweep, gpipe-run train): the file's schedule, validated, and the
// generator flags it replaces refused beside it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "schedules/schedule.hpp"

namespace gpipe::tools {

// Throws InputError when `schedule_file` is given and so is a flag the file
// replaces (--schedule, --stages, --stages-per-rank, --microbatches,
// --backward-order: the file gives the schedule, its stages and micro-batches).
void refuse_beside_schedule_file(const CLI::App& cmd, const std::string& schedule_file);

// The file's schedule (IR JSON or torch CSV); throws InputError naming the
// file and its first error.
[[nodiscard]] schedules::Schedule read_checked_schedule(const std::string& path);

}  // namespace gpipe::tools
