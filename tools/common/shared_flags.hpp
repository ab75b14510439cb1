// The flags several commands take, each defined once: its names, its help and
// its check. A command adds the ones it takes, in the order its help lists
// them; a flag that only one command has stays with that command.
//
//   --model           gpipe-sim plan, profile; gpipe-run train, validate, profile, infer
//   --partition       gpipe-sim run; gpipe-run train, validate, infer
//   --backward-order  gpipe-sim run, sweep, schedule; gpipe-run train, validate
//   --recompute       gpipe-sim run, schedule; gpipe-run train (a list: grid_flags.hpp)
//   --optimizer       gpipe-sim run, sweep; gpipe-run train, validate, profile
//   --profile         gpipe-sim run, sweep; gpipe-run train, validate, infer
//   --schedule-file   gpipe-sim run, sweep; gpipe-run train
//   -K -V -M -N -b and --schedule: pipeline_flags.hpp, which makes the plan request
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace gpipe::tools {

// --model SPEC, required; `also` is appended to the spec's grammar (what the
// command does with it, where that differs).
CLI::Option* add_model_flag(CLI::App& cmd, std::string& spec, std::string_view also = {});

// --partition balanced|uniform|n1,n2,...
CLI::Option* add_partition_flag(CLI::App& cmd, std::string& partition);

// --backward-order reverse|forward, GPipe's.
CLI::Option* add_backward_order_flag(CLI::App& cmd, std::string& order);

// --recompute POLICY, one of schedules::recompute_policy_names().
CLI::Option* add_recompute_flag(CLI::App& cmd, std::string& policy);

// --optimizer NAME, one of models::optimizer_names(); `help` says what the
// command uses it for (static memory, the step it times, the step it runs).
CLI::Option* add_optimizer_flag(CLI::App& cmd, std::string& optimizer, std::string_view help);

// --profile FILE or a shipped profile's name; `help` says what the command
// does with its costs.
CLI::Option* add_profile_flag(CLI::App& cmd, std::string& profile, std::string_view help);

// --schedule-file FILE (an IR JSON or torch CSV; tools/common/schedule_file.hpp
// reads it); `help` says what the command does with the file's schedule.
CLI::Option* add_schedule_file_flag(CLI::App& cmd, std::string& path, std::string_view help);

}  // namespace gpipe::tools
