// gpipe-run validate: the simulator against real runs over a grid. Profile the
// model on this CPU at every micro-batch size the grid needs (or read
// --profile), then run the grid --rounds times, interleaved, predicting,
// training and diffing each configuration (calibration/calibration.hpp);
// in the last round print a row of predicted vs measured step time (the
// median of every warm step), its noise band, bubble and peak activation as
// each finishes; --out writes the CSV that plots/validation.py draws, --json
// prints every row with its full diff.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/files.hpp"
#include "calibration/calibration.hpp"
#include "exec/profiling/profiler_options.hpp"
#include "models/model_spec.hpp"
#include "plan/microbatches.hpp"
#include "plan/model_profile.hpp"
#include "profiles/shipped.hpp"
#include "schedules/ir_json.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/metrics.hpp"
#include "timelines/serving_json.hpp"
#include "tools/common/grid_flags.hpp"
#include "tools/common/int_list.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/progress.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/commands.hpp"
#include "tools/gpipe-run/launcher.hpp"
#include "tools/gpipe-run/rounds_progress.hpp"
#include "tools/gpipe-run/run_flags.hpp"
#include "tools/gpipe-run/validate_inference.hpp"

namespace gpipe::tools {
namespace {

// A file of this process in the temporary folder: "gpipe-validate-PID-NAME".
std::string scratch_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("gpipe-validate-{}-{}", getpid(), name)).string();
}

struct ValidateFlags {
  RunFlags run;
  CudaFlags cuda;
  CpuFlags cpu;
  GridFlags grid;
  int steps = 5;
  int rounds = 3;
  std::string save_profile;
  std::string out;
  bool json = false;
  int warmup = 2;
  int repeats = 5;
  std::string launcher;  // "": every configuration in this process
  int data_parallel = 1;    // replicas of every configuration (under the launcher)
  int zero = 0;             // ZeRO's stage over them
  int tensor_parallel = 1;  // parts of every rank's blocks (under the launcher)
  InferenceValidateFlags inference;
};

constexpr const char* kRowFormat =
    "{:<6} {:<11} {:>3} {:>4} {:>4}  {:>10} {:>10} {:>6} {:>7} {:>7}  {:>7} {:>7}  {:>11} {:>11}  {}\n";


void print_table_header() {
  std::cout << fmt::format(fmt::runtime(kRowFormat), "sched", "recompute", "K", "M", "b", "step pred",
                           "measured", "noise", "error", "band", "bubble", "meas", "peak act", "measured",
                           "equal");
}

// Inside the noise band: "in"; else how far outside, in points of the median.
std::string band_cell(const calibration::CalibrationRow& r) {
  const double outside = r.outside_band_points();
  if (outside == 0) return "in";
  return fmt::format("{}{:.1f}", r.predicted_step_us() > r.noise.median_us ? "+" : "-", outside);
}

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

void print_row(const calibration::CalibrationRow& r) {
  const plan::PlanRequest& req = r.request;
  const std::string recompute(schedules::to_string(req.recompute));
  if (!r.ok()) {
    std::cout << fmt::format("{:<6} {:<11} {:>3} {:>4}  skipped: {}\n", req.schedule, recompute,
                             req.stages, req.microbatches, r.skipped);
    return;
  }
  const double error = r.step_error_pct();
  std::cout << fmt::format(
                   fmt::runtime(kRowFormat), req.schedule, recompute, req.stages, req.microbatches,
                   r.microbatch_sizes.front(), format_time_us(r.predicted_step_us()),
                   format_time_us(r.noise.median_us), fmt::format("{:.1f}%", r.noise.band_pct()),
                   std::isnan(error) ? std::string("n/a") : fmt::format("{:+.1f}%", error), band_cell(r),
                   percent(r.diff.predicted_bubble), percent(r.diff.measured_bubble),
                   format_bytes(r.predicted_peak_activation_bytes),
                   format_bytes(r.measured_peak_activation_bytes), r.peak_activation_equal() ? "yes" : "NO")
            << std::flush;
}

// Mean |step time error| over the rows run, and the row with the largest one.
struct ErrorSummary {
  int count = 0;
  double mean_abs_pct = 0;
  const calibration::CalibrationRow* worst = nullptr;
};

template <typename Keep>
ErrorSummary summarise(const std::vector<calibration::CalibrationRow>& rows, Keep keep) {
  ErrorSummary s;
  double sum = 0;
  for (const auto& r : rows) {
    if (!r.ok() || !keep(r)) continue;
    const double e = std::abs(r.step_error_pct());
    if (std::isnan(e)) continue;
    ++s.count;
    sum += e;
    if (s.worst == nullptr || e > std::abs(s.worst->step_error_pct())) s.worst = &r;
  }
  s.mean_abs_pct = s.count > 0 ? sum / s.count : 0.0;
  return s;
}

std::string name_of(const calibration::CalibrationRow& r) {
  return fmt::format("{} {} K={} M={}", r.request.schedule, schedules::to_string(r.request.recompute),
                     r.request.stages, r.request.microbatches);
}

std::string error_line(const ErrorSummary& s) {
  return fmt::format("mean |error| {:.1f} % over {}, largest {:+.1f} % ({})", s.mean_abs_pct, s.count,
                     s.worst->step_error_pct(), name_of(*s.worst));
}

// The evidence: over the rows `keep` takes, how many have a quiet noise band,
// the median |error| of those, and how far outside its band any prediction lies.
template <typename Keep>
void print_noise_summary(const std::vector<calibration::CalibrationRow>& rows, Keep keep, const std::string& which) {
  int run = 0, inside = 0;
  std::vector<double> quiet_errors;
  const calibration::CalibrationRow* farthest = nullptr;
  std::vector<double> bands;
  for (const auto& r : rows) {
    if (!r.ok() || !keep(r)) continue;
    ++run;
    bands.push_back(r.noise.band_pct());
    if (r.noise.band_pct() < calibration::kQuietBandPct && !std::isnan(r.step_error_pct())) {
      quiet_errors.push_back(std::abs(r.step_error_pct()));
    }
    if (r.outside_band_points() == 0) ++inside;
    if (farthest == nullptr || r.outside_band_points() > farthest->outside_band_points()) farthest = &r;
  }
  if (run == 0) return;
  std::ranges::sort(bands);
  std::cout << fmt::format("noise{}: the band (interquartile range of the warm steps) is {:.1f} % at the median, "
                           "{:.1f} % at the widest\n",
                           which, calibration::quantile(bands, 0.5), bands.back());
  if (quiet_errors.empty()) {
    std::cout << fmt::format("  no configuration has a band under {:.0f} %: this machine is too noisy for the "
                             "step times to be evidence (longer steps, --rounds or --steps help)\n",
                             calibration::kQuietBandPct);
  } else {
    std::ranges::sort(quiet_errors);
    std::cout << fmt::format("  median |error| {:.1f} % over the {} of {} configurations whose band is under {:.0f} %\n",
                             calibration::quantile(quiet_errors, 0.5), quiet_errors.size(), run, calibration::kQuietBandPct);
  }
  std::cout << fmt::format("  {} of {} predictions inside their band", inside, run);
  if (farthest->outside_band_points() > 0) {
    std::cout << fmt::format("; the farthest outside by {:.1f} points ({})", farthest->outside_band_points(),
                             name_of(*farthest));
  }
  std::cout << "\n";
}

// The link model alone (sim/diff.hpp TransferError), over every message of
// the configurations run: what the profile's link predicts against the time
// the bytes took, each message's error pooled over every row.
void print_link_summary(const std::vector<calibration::CalibrationRow>& rows) {
  int messages = 0;
  double predicted = 0, measured = 0;
  std::int64_t smallest = 0, largest = 0;
  std::vector<double> errors;
  for (const auto& r : rows) {
    const sim::TransferError& t = r.diff.transfers;
    if (!r.ok() || t.count == 0) continue;
    messages += t.count;
    predicted += t.predicted_mean_us * t.count;
    measured += t.measured_mean_us * t.count;
    errors.insert(errors.end(), t.abs_errors_pct.begin(), t.abs_errors_pct.end());
    smallest = smallest == 0 ? r.message_bytes_min : std::min(smallest, r.message_bytes_min);
    largest = std::max(largest, r.message_bytes_max);
  }
  if (messages == 0) return;
  std::cout << fmt::format("link model: {} transfers of {} to {}, mean {} predicted against {} measured ({:+.1f} %)",
                           messages, format_bytes(smallest), format_bytes(largest), format_time_us(predicted / messages),
                           format_time_us(measured / messages),
                           measured > 0 ? (predicted - measured) / measured * 100 : 0.0);
  if (!errors.empty()) {
    std::ranges::sort(errors);
    std::cout << fmt::format("; a message's |error|: median {:.1f} %, largest {:.1f} %", calibration::quantile(errors, 0.5),
                             errors.back());
  }
  std::cout << "\n";
}

// The collectives' model alone, pooled over every row: `what` of each row's
// diff (each data-parallel reduction of a stage, from its start to its end on
// the rank's reduce stream; or each action's tensor-parallel collectives).
void print_collective_summary(const std::vector<calibration::CalibrationRow>& rows, sim::TransferError sim::TimelineDiff::*what,
                              std::string_view many, std::string_view one) {
  int count = 0;
  double predicted = 0, measured = 0;
  std::vector<double> errors;
  for (const auto& r : rows) {
    const sim::TransferError& g = r.diff.*what;
    if (!r.ok() || g.count == 0) continue;
    count += g.count;
    predicted += g.predicted_mean_us * g.count;
    measured += g.measured_mean_us * g.count;
    errors.insert(errors.end(), g.abs_errors_pct.begin(), g.abs_errors_pct.end());
  }
  if (count == 0) return;
  std::cout << fmt::format("collectives: {} {}, mean {} predicted against {} measured ({:+.1f} %)", count, many,
                           format_time_us(predicted / count), format_time_us(measured / count),
                           measured > 0 ? (predicted - measured) / measured * 100 : 0.0);
  if (!errors.empty()) {
    std::ranges::sort(errors);
    std::cout << fmt::format("; {}'s |error|: median {:.1f} %, largest {:.1f} %", one, calibration::quantile(errors, 0.5),
                             errors.back());
  }
  std::cout << "\n";
}

void print_summary(const std::vector<calibration::CalibrationRow>& rows, int tensor_parallel) {
  const auto run = static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const auto& r) { return r.ok(); }));
  std::cout << fmt::format("\n{} configurations: {} run, {} skipped (cannot exist)\n", rows.size(), run,
                           rows.size() - run);
  if (run == 0) return;
  const ErrorSummary all = summarise(rows, [](const auto&) { return true; });
  if (all.worst != nullptr) std::cout << "step time error: " << error_line(all) << "\n";
  // Ranks are threads: with more of them than hardware threads they take
  // turns on the cores, which the simulator (one processor per rank) does not model.
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const auto fits_cores = [cores, parts = tensor_parallel](const auto& r) {
    return r.request.stages * r.request.data_parallel * parts <= cores;
  };
  const ErrorSummary fits = summarise(rows, fits_cores);
  if (fits.count < all.count && fits.worst != nullptr) {
    std::cout << fmt::format("  with K x T x D <= {} (this machine's hardware threads): {}\n", cores, error_line(fits));
    print_noise_summary(rows, fits_cores, fmt::format(" with K x T x D <= {}", cores));
  } else {
    print_noise_summary(rows, fits_cores, "");
  }
  double bubble = 0;
  int equal = 0;
  for (const auto& r : rows) {
    if (!r.ok()) continue;
    bubble += std::abs(r.diff.bubble_error_points);
    equal += r.peak_activation_equal();
  }
  std::cout << fmt::format("bubble error: mean |error| {:.1f} points\n", bubble / static_cast<double>(run));
  std::cout << fmt::format("peak activation equal to the prediction in {} of {} configurations\n", equal, run);
  print_link_summary(rows);
  print_collective_summary(rows, &sim::TimelineDiff::reductions, "data-parallel reductions", "a reduction");
  print_collective_summary(rows, &sim::TimelineDiff::tensor_parallel, "actions' tensor-parallel all-reduces",
                           "an action");
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

exec::ProfilerOptions profiler_options(const ValidateFlags& f, const exec::OptimizerConfig& optimizer,
                                       int threads_per_rank) {
  exec::ProfilerOptions options;
  options.threads_per_rank = threads_per_rank;
  options.warmup = f.warmup;
  options.repeats = f.repeats;
  options.seed = f.run.seed;
  options.optimizer = optimizer;
  options.on_pass = report_profiler_pass;
  return options;
}

// With --launcher: the layers and the link between two processes, measured by
// `gpipe-run profile` under the launcher (exec/mpi/link_probe.hpp), so that
// the predictions use the real link.
profiles::Profile launched_profile(const ValidateFlags& f, const models::Model& model, const std::vector<int>& sizes,
                                   const exec::OptimizerConfig& optimizer, int threads_per_rank,
                                   bool announce = true) {
  const Launcher launcher(f.launcher);
  const std::string path = f.save_profile.empty() ? scratch_path("profile.json") : f.save_profile;
  std::vector<std::string> args{"profile", "--backend", "cpu", "--model", model.spec, "--micro-batch-sizes",
                                fmt::format("{}", fmt::join(sizes, ",")), "--warmup", std::to_string(f.warmup),
                                "--repeats", std::to_string(f.repeats), "--seed", std::to_string(f.run.seed),
                                "--optimizer", std::string(models::to_string(optimizer.kind)),
                                "--threads-per-rank", std::to_string(threads_per_rank), "--out", path};
  if (f.inference.inference()) {  // forwards alone, as the stream runs them
    args.insert(args.end(), {"--workload", "inference"});
  }
  // With tensor parallelism one rank's T parts measure their layers together.
  if (f.tensor_parallel > 1) args.insert(args.end(), {"--tensor-parallel", std::to_string(f.tensor_parallel)});
  const int processes = std::max(2, f.tensor_parallel);
  const Launcher::Outcome outcome = launcher.run(processes, args);
  if (outcome.status != 0) throw RunError("measuring the profile: " + failure_of(outcome));
  profiles::Profile profile = profiles::load_profile(path);
  // Under the launcher the other processes poll a core each while rank 0
  // measures, so the profile has no contention; but ranks that compute at
  // once slow each other as processes as much as threads (the cores share
  // memory and the last-level cache), and without it the K = 2 rows came out
  // 2 to 5 % fast. So this process measures it, with threads, at the
  // largest size, as validate does without a launcher. (Not for a
  // tensor-parallel profile: its parts measured their layers beside each other.)
  if (profile.contention.empty() && f.tensor_parallel == 1) {
    exec::ProfilerOptions threads = profiler_options(f, optimizer, threads_per_rank);
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
    std::cout << fmt::format("profile     measured now by `{}` at micro-batch sizes {} ({}, {}); link {:.2f} us + "
                             "bytes at {:.2f} GB/s, fitted to {}{}\n",
                             launcher.prefix(processes) + " gpipe-run profile", fmt::join(sizes, ","), profile.device,
                             profile.dtype, profile.link.latency_us, profile.link.bandwidth_GBps,
                             profile.link.measured_with, f.save_profile.empty() ? "" : ", saved to " + f.save_profile);
  }
  return profile;
}

// One configuration trained as K processes under the launcher: the plan's
// schedule and partition handed over as a schedule file and --partition, the
// measured step read back from the trace the reporter writes.
exec::TrainResult launched_training(const ValidateFlags& f, const exec::TrainOptions& t) {
  const Launcher launcher(f.launcher);
  const std::string schedule_path = scratch_path("schedule.json");
  const std::string trace_path = scratch_path("trace.json");
  write_text_file(schedule_path, schedules::to_json_text(t.schedule));
  std::vector<std::string> args = {"train", "--backend", "cpu", "--model", t.model.spec, "--schedule-file",
                                   schedule_path, "--recompute",
                                   std::string(schedules::to_string(t.schedule.recompute)), "--partition",
                                   fmt::format("{}", fmt::join(t.partition.layers_per_stage, ",")), "--batch",
                                   std::to_string(t.batch), "--steps", std::to_string(t.steps), "--seed",
                                   std::to_string(t.seed), "--optimizer",
                                   std::string(models::to_string(t.optimizer.kind)), "--lr",
                                   fmt::format("{}", t.optimizer.learning_rate), "--watchdog-seconds",
                                   fmt::format("{}", t.watchdog_seconds), "--threads-per-rank",
                                   std::to_string(t.threads_per_rank), "--measure-steps",
                                   std::to_string(t.measured_steps), "--trace", trace_path, "--json",
                                   "--data-parallel", std::to_string(t.schedule.data_parallel), "--zero",
                                   std::to_string(t.zero),
                                   "--tensor-parallel", std::to_string(f.tensor_parallel)};
  const Launcher::Outcome outcome =
      launcher.run(t.schedule.num_ranks * t.schedule.data_parallel * f.tensor_parallel, args);
  std::filesystem::remove(schedule_path);
  if (outcome.status != 0) throw RunError(failure_of(outcome));
  exec::TrainResult result;
  result.timeline = timelines::read_chrome_trace(trace_path);
  std::filesystem::remove(trace_path);
  result.metrics = timelines::compute_metrics(result.timeline);
  // Held in a variable: a range-for over parse(...).at(...) would walk a
  // temporary destroyed before the loop's first step (ASan: heap-use-after-free).
  const nlohmann::json printed = nlohmann::json::parse(outcome.out);
  for (const double loss : printed.at("losses")) result.losses.push_back(loss);
  for (const double us : printed.at("step_times_us")) result.step_times_ns.push_back(std::llround(us * 1e3));
  return result;
}

// One inference configuration served as K processes under the launcher
// (`gpipe-run infer --json`), its measured run read back from the JSON the
// reporter prints.
exec::inference::ServingResult launched_stream(const ValidateFlags& f, const exec::inference::ServingRequest& rq) {
  const Launcher launcher(f.launcher);
  const schedules::Workload& w = rq.workload;
  std::vector<std::string> args = {"infer", "--backend", "cpu", "--model", rq.model->spec, "--partition",
                                   fmt::format("{}", fmt::join(rq.layers_per_stage, ",")), "--stages",
                                   std::to_string(rq.layers_per_stage.size()), "--micro-batch-size",
                                   std::to_string(rq.micro_batch_size), "--requests", std::to_string(w.requests),
                                   "--in-flight", std::to_string(w.in_flight), "--seed", std::to_string(rq.seed),
                                   "--warmup", std::to_string(rq.warmup_items), "--threads-per-rank",
                                   std::to_string(rq.threads_per_rank), "--json"};
  if (w.arrival_interval_us) args.insert(args.end(), {"--arrival-interval-us", fmt::format("{}", *w.arrival_interval_us)});
  if (w.arrival_rate_per_s) {
    args.insert(args.end(), {"--arrival-rate", fmt::format("{}", *w.arrival_rate_per_s), "--arrival-seed",
                             std::to_string(w.seed)});
  }
  const Launcher::Outcome outcome = launcher.run(static_cast<int>(rq.layers_per_stage.size()), args);
  if (outcome.status != 0) throw RunError(failure_of(outcome));
  const nlohmann::json printed = nlohmann::json::parse(outcome.out);
  exec::inference::ServingResult result;
  result.run = timelines::serving_run_from_json(printed.at("run"));
  result.static_bytes = printed.at("run").at("static_bytes").get<std::vector<std::int64_t>>();
  return result;
}

// How validate's profiles are measured: --warmup, --repeats and --seed, with
// the rows' optimizer and threads per rank; a bar on a terminal.

// The profile to predict with: --profile, else one measured now at every
// micro-batch size the grid can use, as a rank of a `stages`-stage run
// computes (on the GPU: in its SM partition; on the CPU: with
// `threads_per_rank` threads).
profiles::Profile grid_profile(const ValidateFlags& f, const models::Model& model,
                               const std::vector<int>& microbatches, const exec::OptimizerConfig& optimizer,
                               int threads_per_rank, int stages = 1) {
  if (!f.run.profile.empty()) {
    const auto path = profiles::resolve_profile(f.run.profile);
    profiles::Profile profile = profiles::load_profile(path);
    if (!f.json) {
      std::cout << fmt::format("profile     {} ({}, {}, {})\n", path.string(), profile.source,
                               profile.device, profile.dtype);
    }
    return profile;
  }
  std::vector<int> sizes = plan::microbatch_sizes_needed(f.grid.batch, microbatches);
  if (sizes.empty()) {
    // Every row would be skipped: say so before minutes of profiling.
    throw InputError(fmt::format("every M of --microbatches is larger than --batch {} (a micro-batch holds "
                                 "at least one sample): nothing to validate",
                                 f.grid.batch));
  }
  if (!f.launcher.empty()) return launched_profile(f, model, sizes, optimizer, threads_per_rank);
  exec::ProfilerOptions options = profiler_options(f, optimizer, threads_per_rank);
  options.on_layer = report_profiled_layer;
  profiles::Profile profile = measure_profile(f.run.backend, f.cuda, stages, model, sizes, options);
  if (!f.save_profile.empty()) profiles::write_profile(profile, f.save_profile);
  if (!f.json) {
    std::cout << fmt::format("profile     measured now at micro-batch sizes {}{} ({}, {}; link {:.2f} us){}\n",
                             fmt::join(sizes, ","),
                             f.run.backend == "cuda" ? fmt::format(" for K={}", stages) : std::string(),
                             profile.device, profile.dtype, profile.link.latency_us,
                             f.save_profile.empty() ? "" : ", saved to " + f.save_profile);
  }
  return profile;
}

int run_validate_stream(const ValidateFlags& f) {
  if (f.run.backend != "cpu") throw InputError("--workload inference validates on the CPU so far");
  if (!f.run.profile.empty() && !f.save_profile.empty()) {
    throw InputError("--save-profile writes the profile measured when no --profile is given; drop one");
  }
  if (!f.out.empty()) check_writable(f.out, "--out");
  if (!f.save_profile.empty()) check_writable(f.save_profile, "--save-profile");
  InferenceValidation v;
  v.model = models::parse_model(f.run.model);
  v.stages = f.grid.stages;
  v.partition = f.run.partition;
  v.seed = f.run.seed;
  v.rounds = f.rounds;
  v.threads_per_rank = f.cpu.threads_for(std::ranges::max(parse_int_list(f.grid.stages, "--stages")));
  v.out = f.out;
  v.json = f.json;
  v.remeasure = f.run.profile.empty() && f.rounds > 1;
  if (!f.launcher.empty()) {
    (void)Launcher(f.launcher);  // its error before any measurement
    v.serve = [&f](const exec::inference::ServingRequest& rq) { return launched_stream(f, rq); };
  }
  v.profile = [&f, &v](const std::vector<int>& sizes, int round) {
    if (!f.run.profile.empty()) {
      profiles::Profile profile = profiles::load_profile(profiles::resolve_profile(f.run.profile));
      plan::check_profile_matches(v.model, profile);
      return profile;
    }
    // Under the launcher: the layers and the link between two processes.
    if (!f.launcher.empty()) {
      return launched_profile(f, v.model, sizes, f.run.optimizer_config(), v.threads_per_rank, round == 0);
    }
    if (!f.json) {
      std::cerr << (round == 0 ? fmt::format("validate: measuring the profile at micro-batch sizes {}\n", fmt::join(sizes, ","))
                               : fmt::format("validate: round {} of {}: the profile again\n", round, f.rounds));
    }
    exec::ProfilerOptions options = profiler_options(f, f.run.optimizer_config(), v.threads_per_rank);
    options.forward_only = true;  // as the stream runs them
    profiles::Profile profile = measure_profile("cpu", f.cuda, 1, v.model, sizes, options);
    if (round == 0 && !f.save_profile.empty()) profiles::write_profile(profile, f.save_profile);
    return profile;
  };
  return run_validate_inference(f.inference, v);
}

int run_validate(const ValidateFlags& f, const CLI::App& cmd) {
  f.inference.check_flags(cmd);
  if (cmd.count("--stages") == 0) throw InputError("give --stages LIST");
  if (f.inference.inference() && f.data_parallel > 1) {
    throw InputError("--data-parallel replicates a training pipeline; an inference stream has no gradients to "
                     "reduce (serve more streams instead)");
  }
  if (f.inference.inference()) return run_validate_stream(f);
  if (cmd.count("--microbatches") == 0) throw InputError("give --microbatches LIST");
  if (cmd.count("--batch") == 0) throw InputError("give --batch N");
  f.cuda.check_backend(f.run.backend);
  f.cpu.check_backend(f.run.backend);
  if (!f.launcher.empty()) {
    if (f.run.backend != "cpu") {
      throw InputError("--launcher runs the cpu backend's ranks as processes; on a GPU, validate runs one "
                       "process with a rank per SM partition");
    }
    (void)Launcher(f.launcher);  // its error before any measurement
  }
  if (f.data_parallel > 1 && f.launcher.empty()) {
    throw InputError(fmt::format("--data-parallel {} runs each configuration's replicas as processes: give "
                                 "--launcher mpirun (or a prefix with {{K}}, which becomes K x T x D)",
                                 f.data_parallel));
  }
  if (f.zero > 0 && f.data_parallel < 2) {
    throw InputError(fmt::format("--zero {} shards over the data-parallel group: give --data-parallel 2 or more",
                                 f.zero));
  }
  if (f.tensor_parallel > 1 && f.launcher.empty()) {
    throw InputError(fmt::format("--tensor-parallel {} runs each rank's parts as processes: give --launcher mpirun "
                                 "(or a prefix with {{K}}, which becomes K x T x D)",
                                 f.tensor_parallel));
  }
  if (f.tensor_parallel > 1 && !f.run.profile.empty()) {
    throw InputError("--tensor-parallel measures one rank's parts' profile under the launcher; drop --profile");
  }
  require_backend(f.run.backend);
  calibration::CalibrationOptions options;
  if (!f.launcher.empty()) {
    options.train = [&f](const exec::TrainOptions& t) { return launched_training(f, t); };
  }
  if (f.run.backend == "cuda") {
    if (exec::parse_launch_environment(exec::current_environment()).world_size > 1) {
      throw InputError("validate runs every configuration in one process (one GPU, a rank per SM "
                       "partition); start it without torchrun, mpirun or srun");
    }
    options.train = [&f](const exec::TrainOptions& t) { return run_training("cuda", f.cuda, t).result; };
  }
  options.model = models::parse_model(f.run.model);
  plan::RequestGrid& grid = options.grid;
  f.grid.apply_to(grid);
  grid.base.partition = models::parse_partition_spec(f.run.partition);
  grid.base.backward_order = *schedules::parse_backward_order(f.run.backward_order);
  grid.base.data_parallel = f.data_parallel;
  grid.base.zero = f.zero;
  // The launcher's processes on this machine: every replica computes beside the others.
  options.replicas_sharing_machine = f.data_parallel;
  options.steps = f.steps;
  options.rounds = f.rounds;
  options.seed = f.run.seed;
  options.optimizer = f.run.optimizer_config();
  options.watchdog_seconds = f.run.watchdog_seconds;
  if (!f.run.profile.empty() && !f.save_profile.empty()) {
    throw InputError("--save-profile writes the profile measured when no --profile is given; drop one");
  }

  if (!f.out.empty()) check_writable(f.out, "--out");
  if (!f.save_profile.empty()) check_writable(f.save_profile, "--save-profile");
  // On the CPU every row runs with the same threads per rank, so that one
  // profile, measured with them, serves the grid: --threads-per-rank, or the
  // cores shared by the largest K's ranks (of every replica).
  if (f.run.backend == "cpu") {
    options.threads_per_rank = f.cpu.threads_for(std::ranges::max(grid.stages) * f.data_parallel * f.tensor_parallel);
  }
  // On the GPU a stage of a K-stage run has 1/K of the SMs: without --profile,
  // each K is predicted from a profile measured in its own partition.
  const bool per_stage_count = f.run.backend == "cuda" && f.run.profile.empty();
  if (per_stage_count && !f.save_profile.empty() && grid.stages.size() > 1) {
    throw InputError("--save-profile with --backend cuda measures one profile per K; give one --stages value");
  }
  auto measured = std::make_shared<std::map<int, profiles::Profile>>();
  if (per_stage_count) {
    options.profile_for = [&f, &options, measured](int k) -> const profiles::Profile& {
      auto it = measured->find(k);
      if (it == measured->end()) {
        it = measured->emplace(k, grid_profile(f, options.model, options.grid.microbatches, options.optimizer, 1, k))
                 .first;
      }
      return it->second;
    };
  }
  const profiles::Profile profile = per_stage_count
                                        ? options.profile_for(grid.stages.front())
                                        : grid_profile(f, options.model, grid.microbatches, options.optimizer,
                                                                       options.threads_per_rank);
  plan::check_profile_matches(options.model, profile);
  // On the CPU the profile is measured again before each round, in this
  // process or under the launcher (its link too), and the rows predict from
  // the median (calibration/). On the GPU the partitions' profiles
  // barely vary.
  const bool remeasure = f.run.backend == "cpu" && f.run.profile.empty() && f.rounds > 1;
  if (remeasure) {
    options.measure_profile = [&f, &options](int round) {
      if (!f.json) std::cerr << fmt::format("validate: round {} of {}: the profile again\n", round, f.rounds);
      const std::vector<int> sizes = plan::microbatch_sizes_needed(f.grid.batch, options.grid.microbatches);
      if (!f.launcher.empty()) {
        return launched_profile(f, options.model, sizes, options.optimizer, options.threads_per_rank,
                                /*announce=*/false);
      }
      return measure_profile(f.run.backend, f.cuda, 1, options.model, sizes,
                             profiler_options(f, options.optimizer, options.threads_per_rank));
    };
    if (!f.save_profile.empty()) {
      options.on_median_profile = [&f](const profiles::Profile& median) {
        profiles::write_profile(median, f.save_profile);
      };
    }
  }
  if (!f.json) {
    std::cout << fmt::format("model       {}, batch {}{}; the grid runs {} times, interleaved, {} steps a run: each "
                             "row's measured step is the median of its {} warm steps, its noise band their "
                             "interquartile range{}\n\n",
                             options.model.spec, f.grid.batch,
                             fmt::format("{}{}",
                                         f.tensor_parallel > 1
                                             ? fmt::format(", each rank's blocks split over {} processes", f.tensor_parallel)
                                             : "",
                                         f.data_parallel > 1
                                             ? fmt::format(" in each of {} replicas{}", f.data_parallel,
                                                           f.zero > 0 ? fmt::format(", ZeRO {}", f.zero) : "")
                                             : ""),
                             f.rounds, f.steps, f.rounds * (f.steps - 1),
                             remeasure ? fmt::format("; the profile is measured before each round and every row "
                                                     "predicted from the median of the {}",
                                                     f.rounds)
                                       : std::string());
    options.on_row = [first = true](const calibration::CalibrationRow& row) mutable {
      RoundsProgress::clear_bar();
      if (first) {
        print_table_header();
        first = false;
      }
      print_row(row);
    };
  }
  auto progress = std::make_shared<RoundsProgress>(f.rounds);
  options.on_run = [progress](int round, int index, int count) { progress->before_run(round, index, count); };
  const auto rows = calibration::run_calibration(profile, options);
  RoundsProgress::clear_bar();
  if (!f.out.empty()) write_text_file(f.out, calibration::calibration_csv(rows));
  if (f.json) {
    std::cout << calibration::calibration_json(rows).dump(2) << "\n";
  } else {
    print_summary(rows, f.tensor_parallel);
    if (!f.out.empty()) std::cout << "every configuration: " << f.out << "\n";
  }
  // A grid of which nothing could run has validated nothing: not a success.
  if (std::none_of(rows.begin(), rows.end(), [](const calibration::CalibrationRow& r) { return r.ok(); })) {
    throw InputError(fmt::format("none of the {} configurations of the grid can exist (each row says why): "
                                 "nothing was validated",
                                 rows.size()));
  }
  return 0;
}

}  // namespace

Subcommand add_validate_command(CLI::App& app) {
  auto f = std::make_shared<ValidateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check the simulator against real runs: for each configuration of a grid, "
                  "predict, train, and compare step time, bubble and peak activation");
  f->run.add_to(*cmd, "Profile of the model to predict with and balance on (default: measure one "
                      "now at the micro-batch sizes the grid needs)");
  // Training's lists and --batch, or inference's (run_validate checks which).
  f->grid.add_to(*cmd, std::int64_t{1} << 30, /*lists_required=*/false, /*batch_required=*/false);
  f->inference.add_to(*cmd);
  f->cpu.add_to(*cmd);
  f->cuda.add_to(*cmd);
  cmd->add_option("--steps", f->steps, "Training steps per configuration and round; every one but the first (cold) is measured")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  cmd->add_option("--rounds", f->rounds,
                  "Runs of the whole grid, interleaved (A B C A B C), so that a slow minute of the machine "
                  "spreads over every configuration; each row compares the median of every warm step of every "
                  "round, and their interquartile range is its noise band; on the CPU the profile (under a "
                  "--launcher, its link too) is measured before each round too, and every row predicted from "
                  "their median")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--save-profile", f->save_profile,
                  "Write the profile measured for the grid (on the CPU with several --rounds: the median of the "
                  "rounds' profiles, which the rows predict from)")->check(nonempty_path());
  cmd->add_option("--warmup", f->warmup, "Profiler: untimed runs per layer and size")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--repeats", f->repeats, "Profiler: timed runs per layer and size (median kept)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--out", f->out, "Write one CSV row per configuration (plots/validation.py)")
      ->check(nonempty_path());
  cmd->add_flag("--json", f->json, "Print every row, with its full diff, as JSON");
  cmd->add_option("--data-parallel", f->data_parallel,
                  "Train every configuration as D replicas of its pipeline, each on its own --batch N samples, "
                  "their gradients summed over MPI (needs --launcher: K x D processes); predicted with the "
                  "profile's collective fit (gpipe-run profile under mpirun -np 2)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--zero", f->zero,
                  "ZeRO's stage over the --data-parallel replicas: 0, or 1 (each replica updates the optimizer state of "
                  "its 1/D share, gradients reduce-scattered, weights all-gathered in STEP)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  cmd->add_option("--tensor-parallel", f->tensor_parallel,
                  "Train every configuration with each rank's transformer or llama blocks split over T processes "
                  "(needs --launcher: K x T x D processes); the profile is measured as one rank's T parts, each "
                  "layer's time with its all-reduces")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--launcher", f->launcher,
                  "Train (or, with --workload inference, serve) each configuration as K processes, one rank each, "
                  "over MPI: mpirun (as mpirun -np K, "
                  "adding --oversubscribe and --allow-run-as-root where needed), or a command prefix with {K}, "
                  "e.g. \"srun -n {K}\"; the profile (layers and the link between two processes) is measured "
                  "the same way unless --profile is given");
  return {cmd, [f, cmd] { return run_validate(*f, *cmd); }};
}

}  // namespace gpipe::tools
