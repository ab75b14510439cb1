#include "tools/gpipe-run/validate_launch.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "models/checkpointing.hpp"
#include "models/optimizer.hpp"
#include "schedules/ir_json.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"
#include "timelines/serving_json.hpp"
#include "tools/gpipe-run/infer_flags.hpp"
#include "tools/gpipe-run/launcher.hpp"
#include "tools/gpipe-run/profile_flags.hpp"
#include "tools/gpipe-run/train_flags.hpp"

namespace gpipe::tools {
namespace {

// A file of this process in the temporary folder: "gpipe-validate-PID-NAME".
std::string scratch_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("gpipe-validate-{}-{}", getpid(), name)).string();
}

// The last line a launched gpipe-run printed about its failure, else the
// launcher's own last words.
std::string failure_of(const Launcher::Outcome& outcome) {
  std::string last, ours;
  std::istringstream lines(outcome.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("---")) continue;
    last = line;
    if (line.starts_with("gpipe-run")) ours = line;
  }
  return fmt::format("`{}` exited {}: {}", outcome.command, outcome.status, ours.empty() ? last : ours);
}

// `gpipe-run profile` as validate's profile needs it: the grid's sizes, the
// profiler's passes and seed, the rows' optimizer and threads, forwards alone
// for inference, and one rank's T x C parts measured together.
ProfileFlags profile_child(const ValidateFlags& f, const models::Model& model, const std::vector<int>& sizes,
                           const exec::OptimizerConfig& optimizer, int threads_per_rank, const std::string& path) {
  ProfileFlags p;
  p.backend = "cpu";
  p.model = model.spec;
  p.micro_batch_sizes = fmt::format("{}", fmt::join(sizes, ","));
  p.warmup = f.warmup;
  p.repeats = f.repeats;
  p.seed = f.run.seed;
  p.optimizer = std::string(models::to_string(optimizer.kind));
  p.cpu.threads_per_rank = threads_per_rank;
  p.out = path;
  if (f.inference.inference()) p.workload = "inference";
  p.tensor_parallel = f.tensor_parallel;
  p.context_parallel = f.context_parallel;
  return p;
}

}  // namespace

profiles::Profile launched_profile(const ValidateFlags& f, const models::Model& model, const std::vector<int>& sizes,
                                   const exec::OptimizerConfig& optimizer, int threads_per_rank, bool announce) {
  const Launcher launcher(f.launcher);
  const std::string path = f.save_profile.empty() ? scratch_path("profile.json") : f.save_profile;
  const int processes = std::max(2, f.tensor_parallel * f.context_parallel);  // one rank's parts, or the link's two
  const Launcher::Outcome outcome =
      launcher.run(processes, profile_child(f, model, sizes, optimizer, threads_per_rank, path).args());
  if (outcome.status != 0) throw RunError("measuring the profile: " + failure_of(outcome));
  profiles::Profile profile = profiles::load_profile(path);
  // Under the launcher the other processes poll a core each while rank 0
  // measures, so the profile has no contention; but ranks that compute at
  // once slow each other as processes as much as threads (the cores share
  // memory and the last-level cache), and without it the K = 2 rows came out
  // fast. So this process measures it, with threads, at the largest size, as
  // validate does without a launcher. (Not for a tensor-parallel profile: its
  // parts measured their layers beside each other.)
  if (profile.contention.empty() && f.tensor_parallel == 1 && f.context_parallel == 1) {
    exec::ProfilerOptions threads = f.profiler_options(optimizer, threads_per_rank);
    threads.warmup = 1;
    threads.on_pass = nullptr;
    threads.forward_only = f.inference.inference();
    profile.contention = measure_profile("cpu", f.cuda, 1, model, {sizes.back()}, threads).contention;
  }
  if (f.save_profile.empty()) {
    std::filesystem::remove(path);
  } else {
    profiles::write_profile(profile, path);
  }
  if (announce && !f.json) {
    std::cout << fmt::format(
        "profile     measured now by `{}` at micro-batch sizes {} ({}, {}); link {:.2f} us + "
        "bytes at {:.2f} GB/s, fitted to {}{}\n",
        launcher.prefix(processes) + " gpipe-run profile", fmt::join(sizes, ","), profile.device, profile.dtype,
        profile.link.latency_us, profile.link.bandwidth_GBps, profile.link.measured_with,
        f.save_profile.empty() ? "" : ", saved to " + f.save_profile);
  }
  return profile;
}

exec::TrainResult launched_training(const ValidateFlags& f, const exec::TrainOptions& t) {
  const Launcher launcher(f.launcher);
  TrainFlags c;
  c.run.backend = "cpu";
  c.run.model = t.model.spec;
  c.run.seed = t.seed;
  c.run.optimizer = std::string(models::to_string(t.optimizer.kind));
  c.run.learning_rate = t.optimizer.learning_rate;
  c.run.watchdog_seconds = t.watchdog_seconds;
  c.pipeline.schedule_file = scratch_path("schedule.json");
  c.pipeline.recompute = std::string(schedules::to_string(t.schedule.recompute));
  if (t.checkpointing) {
    c.pipeline.recompute_method = std::string(models::to_string(t.checkpointing->method));
    c.pipeline.recompute_num_layers = t.checkpointing->num_layers;
  }
  c.run.partition = fmt::format("{}", fmt::join(t.partition.layers_per_stage, ","));
  c.pipeline.batch = t.batch;
  c.cpu.threads_per_rank = t.threads_per_rank;
  c.steps = t.steps;
  c.measure_steps = t.measured_steps;
  c.trace = scratch_path("trace.json");
  c.json = true;
  c.data_parallel = t.replicas();
  c.reduce_after_backward = t.schedule.reduce_after_backward;
  c.zero = t.zero;
  c.tensor_parallel = f.tensor_parallel;
  c.context_parallel = f.context_parallel;
  write_text_file(c.pipeline.schedule_file, schedules::to_json_text(t.schedule));
  const Launcher::Outcome outcome =
      launcher.run(t.schedule.num_ranks * t.schedule.data_parallel * f.tensor_parallel, c.args());
  std::filesystem::remove(c.pipeline.schedule_file);
  if (outcome.status != 0) throw RunError(failure_of(outcome));
  exec::TrainResult result;
  result.timeline = timelines::read_chrome_trace(c.trace);
  std::filesystem::remove(c.trace);
  result.metrics = timelines::compute_metrics(result.timeline);
  // Held in a variable: a range-for over parse(...).at(...) would walk a
  // temporary destroyed before the loop's first step (ASan: heap-use-after-free).
  const nlohmann::json printed = nlohmann::json::parse(outcome.out);
  for (const double loss : printed.at("losses")) result.losses.push_back(loss);
  for (const double us : printed.at("step_times_us")) result.step_times_ns.push_back(std::llround(us * 1e3));
  return result;
}

exec::inference::ServingResult launched_serving(const ValidateFlags& f, const exec::inference::ServingRequest& rq) {
  const Launcher launcher(f.launcher);
  const schedules::Workload& w = rq.workload;
  InferFlags c;
  c.backend = "cpu";
  c.model = rq.model->spec;
  c.partition = fmt::format("{}", fmt::join(rq.layers_per_stage, ","));
  c.stages = static_cast<int>(rq.layers_per_stage.size());
  c.micro_batch_size = rq.micro_batch_size;
  c.requests = w.requests;
  c.in_flight = w.in_flight;
  c.arrival_interval_us = w.arrival_interval_us;
  c.arrival_rate = w.arrival_rate_per_s;
  c.arrival_seed = w.seed;
  c.seed = rq.seed;
  c.warmup = rq.warmup_items;
  c.cpu.threads_per_rank = rq.threads_per_rank;
  c.json = true;
  const Launcher::Outcome outcome = launcher.run(c.stages, c.args());
  if (outcome.status != 0) throw RunError(failure_of(outcome));
  const nlohmann::json printed = nlohmann::json::parse(outcome.out);
  exec::inference::ServingResult result;
  result.run = timelines::serving_run_from_json(printed.at("run"));
  result.static_bytes = printed.at("run").at("static_bytes").get<std::vector<std::int64_t>>();
  return result;
}

}  // namespace gpipe::tools
