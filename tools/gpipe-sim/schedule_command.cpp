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
#include "tools/common/pipeline_flags.hpp"
#include "tools/common/shared_flags.hpp"

namespace gpipe::tools {
namespace {

using namespace gpipe::schedules;

struct ScheduleFlags {
  PipelineFlags shape;  // the generator's name, K, V and M
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
  const std::int64_t at_least = std::int64_t{f.shape.stages} * f.shape.microbatches;
  if (f.format == "text" && at_least > kMaxGridCells / f.shape.stages) {
    throw InputError(fmt::format("a grid of {} ranks and {} actions or more is too large to print (more than {} "
                                 "cells): use --format json or --format csv",
                                 f.shape.stages, at_least, kMaxGridCells));
  }
}

int run_schedule(const ScheduleFlags& f, const CLI::App& cmd) {
  if (f.shape.schedule == sim::kZbAuto) {
    throw InputError("--schedule zb-auto searches with the simulator and needs a profile: use gpipe-sim run "
                     "--profile FILE --schedule zb-auto");
  }
  if (f.shape.schedule != "gpipe" && cmd.count("--backward-order") > 0) {
    throw InputError("--backward-order applies to --schedule gpipe only");
  }
  check_format_fits(f);
  ScheduleOptions options;
  options.num_ranks = f.shape.stages;
  options.stages_per_rank = f.shape.stages_per_rank;
  options.num_microbatches = f.shape.microbatches;
  options.backward_order = *parse_backward_order(f.backward_order);
  options.recompute = *parse_recompute_policy(f.recompute);
  Schedule schedule = generate(f.shape.schedule, options);
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
  flags->shape.add_schedule(*cmd, sim::predictable_schedule_names(),
                            fmt::format("Schedule generator: {} (zb-auto needs a profile: gpipe-sim run --profile "
                                        "FILE --schedule zb-auto)",
                                        fmt::join(sim::predictable_schedule_names(), ", ")));
  flags->shape.add_shape(*cmd, 100000, /*required=*/true);
  add_backward_order_flag(*cmd, flags->backward_order);
  add_recompute_flag(*cmd, flags->recompute);
  cmd->add_flag("--lowered", flags->lowered,
                "Print the lowered program: with R, SEND/RECV and STEP actions (as CSV: torch's "
                "runtime dialect, with WAIT_SEND_F/B and without STEP)");
  cmd->add_option("--format", flags->format, "Output format")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  return {cmd, [flags, cmd] { return run_schedule(*flags, *cmd); }};
}

}  // namespace gpipe::tools
