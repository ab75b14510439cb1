// gpipe-sim sweep: a what-if grid over K, M, schedules and recompute policies
// (or the recompute policies of one schedule file) for one mini-batch, in parallel, with a progress bar on a terminal, every row
// to CSV/JSON, and the best configuration per K that fits a memory limit.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "sim/sweep.hpp"
#include "sim/zb_auto.hpp"
#include "timelines/report_check.hpp"
#include "tools/common/grid_flags.hpp"
#include "tools/common/json_array_writer.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/progress.hpp"
#include "tools/common/schedule_file.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-sim/commands.hpp"
#include "tools/gpipe-sim/inference_flags.hpp"
#include "tools/gpipe-sim/inference_sweep.hpp"
#include "tools/gpipe-sim/scenario_flags.hpp"

namespace gpipe::tools {
namespace {

struct SweepFlags {
  FixedFlags fixed;
  std::string schedule_file;  // instead of the grid's schedules: its one, with each recompute policy
  GridFlags grid;
  InferenceFlags inference;
  InferenceGridFlags inference_grid;
  std::string partition = "balanced";
  std::string memory_limit;
  std::string out;
  std::string json_out;
  int threads = 0;
  // A bound on the work a command line asks for; a user who means it raises it.
  std::int64_t max_configurations = 100'000;
};

struct SweepCounts {
  std::size_t rows = 0;
  std::size_t skipped = 0;
  std::size_t too_big = 0;  // over the memory limit
};

void print_summary(const SweepCounts& n, const std::vector<const sim::SweepRow*>& best,
                   std::optional<std::int64_t> limit) {
  std::cout << fmt::format("{} configurations: {} simulated, {} skipped (cannot exist)", n.rows,
                           n.rows - n.skipped, n.skipped);
  if (limit) std::cout << fmt::format(", {} over the memory limit of {}", n.too_big, format_bytes(*limit));
  std::cout << "\n\nbest configuration per K" << (limit ? " within the memory limit" : "") << ":\n";
  std::cout << fmt::format("{:>4}  {:>2}  {:>5}  {:>4}  {:<16}  {:<11}  {:>10}  {:>14}  {:>7}  {:>11}\n", "K",
                           "V", "M", "b", "schedule", "recompute", "step", "samples/s", "bubble", "peak memory");
  for (const sim::SweepRow* r : best) {
    std::cout << fmt::format("{:>4}  {:>2}  {:>5}  {:>4}  {:<16}  {:<11}  {:>10}  {:>14.1f}  {:>6.2f}%  {:>11}\n",
                             r->request.stages, r->request.stages_per_rank, r->request.microbatches,
                             r->micro_batch_size, r->request.schedule, schedules::to_string(r->request.recompute),
                             format_time_us(r->metrics.step_time_us),
                             r->metrics.throughput_samples_per_s, 100 * r->metrics.bubble_fraction,
                             format_bytes(r->peak_memory_bytes));
  }
}

int run(const SweepFlags& f, const CLI::App& cmd) {
  if (f.inference.inference()) {
    if (ClusterFlags::any_given(cmd)) {
      throw InputError("--workload inference: an inference stream is one pipeline of one GPU a stage; "
                       "--tensor-parallel, --data-parallel, --zero and the cluster's flags plan training");
    }
    return run_inference_sweep(f.inference, f.inference_grid,
                               {f.fixed, f.partition, f.memory_limit, f.out}, cmd);
  }
  f.inference.check_flags(cmd);
  if (cmd.count("--batch") == 0) throw InputError("give --batch N");
  sim::SweepGrid sweep;
  refuse_beside_schedule_file(cmd, f.schedule_file);
  if (!f.schedule_file.empty()) {
    f.grid.apply_to(sweep.grid, read_checked_schedule(f.schedule_file));
  } else if (cmd.count("--stages") == 0 || cmd.count("--microbatches") == 0) {
    throw InputError("give --stages LIST and --microbatches LIST, or --schedule-file FILE");
  } else {
    f.grid.apply_to(sweep.grid);
  }
  if (sweep.grid.size() > f.max_configurations) {
    throw InputError(fmt::format("the grid has {} configurations, more than --max-configurations {}: narrow the "
                                 "lists, or raise the cap",
                                 sweep.grid.size(), f.max_configurations));
  }
  sweep.grid.base.partition = models::parse_partition_spec(f.partition);
  f.fixed.apply_to(sweep.grid.base, sweep.conditions);
  if (!f.memory_limit.empty() && f.memory_limit != "device") (void)parse_bytes(f.memory_limit, "--memory-limit");

  const auto path = profiles::resolve_profile(f.fixed.profile);
  const profiles::Profile profile = profiles::load_profile(path);
  const std::optional<MemoryLimit> memory_limit = memory_limit_of(f.memory_limit, profile);
  std::optional<std::int64_t> limit;
  if (memory_limit) limit = memory_limit->bytes;
  sweep.conditions.memory_limit_bytes = limit;  // zb-auto searches within it
  // A typo in an output path fails before the sweep, not after it.
  if (!f.out.empty()) check_writable(f.out, "--out");
  if (!f.json_out.empty()) check_writable(f.json_out, "--json-out");
  const int threads = f.threads > 0 ? f.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::cout << fmt::format("profile {} ({}, {}, {}), batch {}\n", path.string(), profile.source,
                           profile.device, profile.dtype, f.grid.batch);
  std::cout << runtime_overhead_line(f.fixed);
  // A bar and an estimate on a terminal only.
  std::optional<Progress> progress;
  const auto show = [&progress](std::size_t done, std::size_t total) {
    if (!progress) {
      progress.emplace(static_cast<std::int64_t>(total), "configurations", std::cerr, Progress::Options{.bar = true});
    }
    progress->update(static_cast<std::int64_t>(done));
  };
  // Rows go to the files as they come: a million of them are never all held.
  std::optional<std::ofstream> csv;
  std::optional<std::ofstream> json;
  std::optional<JsonArrayWriter> json_rows;
  if (!f.out.empty()) {
    csv = open_for_writing(f.out);
    *csv << sim::sweep_csv_head();
  }
  if (!f.json_out.empty()) {
    json = open_for_writing(f.json_out);
    json_rows.emplace(*json);
  }
  SweepCounts counts;
  sim::BestPerStageCount best(limit);
  const auto take = [&](sim::SweepRow&& r) {
    ++counts.rows;
    if (r.ok()) {
      timelines::check_report(r.metrics, "a sweep row");
      counts.too_big += limit && r.peak_memory_bytes > *limit ? 1 : 0;
      best.offer(r);
    } else {
      ++counts.skipped;
    }
    if (csv) *csv << sim::sweep_csv_row(r, limit);
    if (json_rows) json_rows->add(sim::sweep_json_row(r, limit));
  };
  sim::stream_sweep(profile, sweep, threads, take, stderr_is_terminal() ? sim::SweepProgress(show) : nullptr);
  if (csv) finish_writing(*csv, f.out);
  if (json) {
    json_rows->finish();
    finish_writing(*json, f.json_out);
  }
  print_summary(counts, best.rows(), limit);
  if (!f.out.empty()) std::cout << "\nevery configuration: " << f.out << "\n";
  return 0;
}

}  // namespace

Subcommand add_sweep_command(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Predict a grid of configurations (K x M x schedule x recompute) for one mini-batch, or of an inference "
      "stream (K x B in flight x b, --workload inference)");
  f->fixed.add_to(*cmd, f->schedule_file);
  f->grid.known_schedules = sim::predictable_schedule_names();
  // The lists or --schedule-file; --batch for training (run() checks).
  f->grid.add_to(*cmd, std::int64_t{1} << 40, /*lists_required=*/false, /*batch_required=*/false);
  f->inference.add_to(*cmd, /*with_in_flight=*/false);
  f->inference_grid.add_to(*cmd);
  cmd->add_option("--partition", f->partition, "balanced or uniform")
      ->check(CLI::IsMember({"balanced", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--memory-limit", f->memory_limit,
                  "Memory per rank (static + activations), e.g. 80GB, or device: the profile's device "
                  "memory less 5 % (the default where the profile names it). The summary keeps what fits, "
                  "and zb-auto searches within it");
  cmd->add_option("--out", f->out, "Write every configuration as CSV")->check(nonempty_path());
  cmd->add_option("--json-out", f->json_out, "Write every configuration as JSON")->check(nonempty_path());
  cmd->add_option("--threads", f->threads, "Worker threads (default: all cores)")->check(CLI::Range(1, 1024));
  cmd->add_option("--max-configurations", f->max_configurations,
                  "Refuse a grid of more configurations than this (schedules x V x recompute x K x M)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  return {cmd, [f, cmd] { return run(*f, *cmd); }};
}

}  // namespace gpipe::tools
