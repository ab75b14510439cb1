// gpipe-sim schedule: generate a schedule and print it as text, JSON or CSV
// (torch.distributed.pipelining's schedule CSV, which torch's _load_csv reads).
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "interop/torch_csv.hpp"
#include "interop/torch_dialect.hpp"
#include "schedules/generate.hpp"
#include "schedules/grid_printer.hpp"
#include "schedules/ir_json.hpp"
#include "schedules/ir_text.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "sim/zb_auto.hpp"
#include "tools/gpipe-sim/commands.hpp"

namespace gpipe::tools {
namespace {

using namespace gpipe::schedules;

struct ScheduleFlags {
  std::string schedule = "gpipe";
  int stages = 0;
  int stages_per_rank = 0;  // 0: the family's own
  int microbatches = 0;
  std::string backward_order = "reverse";
  std::string recompute = "never";
  bool lowered = false;
  std::string format = "text";
};

// What the chosen format can hold is known from the flags alone: refused
// here, before a schedule of K x M actions or more is built (-K 1000 -M 1000
// --lowered took 1 GB and 10 s to be told no).
void check_format_fits(const ScheduleFlags& f) {
  if (f.format == "csv" && f.lowered && f.recompute != "never") {
    throw InputError(fmt::format("--format csv --lowered: torch's schedule CSV has no recompute action, so "
                                 "--recompute {} cannot be written; use --recompute never, or --format json",
                                 f.recompute));
  }
  // Every stage has at least an action per micro-batch (its F, or an
  // OVERLAP_F_B holding it), so the grid's K rows have K x M actions or more
  // between them: a lower bound of what grid_too_large() counts once built.
  const std::int64_t at_least = std::int64_t{f.stages} * f.microbatches;
  if (f.format == "text" && at_least > kMaxGridCells / f.stages) {
    throw InputError(fmt::format("a grid of {} ranks and {} actions or more is too large to print (more than {} "
                                 "cells): use --format json or --format csv",
                                 f.stages, at_least, kMaxGridCells));
  }
}

int run_schedule(const ScheduleFlags& f, const CLI::App& cmd) {
  if (f.schedule == sim::kZbAuto) {
    throw InputError("--schedule zb-auto searches with the simulator and needs a profile: use gpipe-sim run "
                     "--profile FILE --schedule zb-auto");
  }
  if (f.schedule != "gpipe" && cmd.count("--backward-order") > 0) {
    throw InputError("--backward-order applies to --schedule gpipe only");
  }
  check_format_fits(f);
  ScheduleOptions options;
  options.num_ranks = f.stages;
  options.stages_per_rank = f.stages_per_rank;
  options.num_microbatches = f.microbatches;
  options.backward_order = *parse_backward_order(f.backward_order);
  options.recompute = *parse_recompute_policy(f.recompute);
  Schedule schedule = generate(f.schedule, options);
  if (f.lowered) schedule = lower(schedule);
  validate(schedule);  // a generator bug must never print a broken schedule
  if (f.format == "json") {
    std::cout << to_json_text(schedule);
  } else if (f.format == "csv") {
    // What torch reads: compute-only as it stands; lowered in the dialect of
    // torch's runtime (send waits, no STEP), which has no R to offer.
    const Schedule for_torch = interop::torch_comms_dialect(schedule);
    validate(for_torch);
    std::cout << interop::to_csv(for_torch);
  } else {
    if (grid_too_large(schedule)) {
      throw InputError(fmt::format("a grid of {} ranks and up to {} steps is too large to print (more than {} "
                                   "cells): use --format json or --format csv",
                                   schedule.num_ranks, schedule.total_actions(), kMaxGridCells));
    }
    std::cout << to_text(schedule);
  }
  return 0;
}

}  // namespace

Subcommand add_schedule_command(CLI::App& app) {
  auto flags = std::make_shared<ScheduleFlags>();
  CLI::App* cmd = app.add_subcommand(
      "schedule", "Generate a schedule and print it (text grid, IR JSON or torch-style CSV)");
  cmd->add_option("--schedule", flags->schedule,
                  fmt::format("Schedule generator: {} (zb-auto needs a profile: gpipe-sim run --profile FILE "
                              "--schedule zb-auto)",
                              fmt::join(sim::predictable_schedule_names(), ", ")))
      ->check(CLI::IsMember(sim::predictable_schedule_names()))
      ->capture_default_str();
  cmd->add_option("--stages,-K", flags->stages,
                  "Number of pipeline ranks K; the model is cut into K x V stages")
      ->required()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--stages-per-rank", flags->stages_per_rank,
                  "Stages per rank V: interleaved-1f1b, looped-bfs and interleaved-zb take V >= 2 "
                  "(default 2), zbv and dualpipev V = 2 (a V shape), the others V = 1 (default: the "
                  "schedule's own)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--microbatches,-M", flags->microbatches, "Micro-batches per mini-batch M")
      ->required()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--backward-order", flags->backward_order,
                  "GPipe backward order: reverse (B of M-1 first, GPipe Fig. 2c) or forward (B0 first)")
      ->check(CLI::IsMember({"reverse", "forward"}))
      ->capture_default_str();
  cmd->add_option("--recompute", flags->recompute,
                  "Re-materialisation policy, applied by lowering (R before the backward)")
      ->check(CLI::IsMember(schedules::recompute_policy_names()))
      ->capture_default_str();
  cmd->add_flag("--lowered", flags->lowered,
                "Print the lowered program: with R, SEND/RECV and STEP actions (as CSV: torch's "
                "runtime dialect, with WAIT_SEND_F/B and without STEP)");
  cmd->add_option("--format", flags->format, "Output format")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  return {cmd, [flags, cmd] { return run_schedule(*flags, *cmd); }};
}

}  // namespace gpipe::tools
