// gpipe-run train: train a model through a pipeline schedule on CPU threads
// or on one GPU (a stage per SM partition), printing the loss of every step as it comes, then the last step's measured
// metrics as gpipe-sim run prints a prediction (both bubble conventions,
// per-rank busy time, utilisation, peak activation and static bytes);
// --json prints {"losses": [...], "metrics": {...}, "step_times_us": [...]}
// and nothing else on stdout; --measure-steps N measures the last N steps and
// reports the one of median time; --trace writes the measured step's timeline as a Chrome trace (with
// the GPU's kernels beside the actions, from CUPTI, on --backend cuda). A
// long run says on stderr how long it will take (tools/common/progress.hpp).
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "exec/runtime/fault.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/trainer.hpp"
#include "models/model_spec.hpp"
#include "plan/microbatches.hpp"
#include "plan/model_profile.hpp"
#include "plan/plan.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "schedules/compute_order.hpp"
#include "schedules/generate.hpp"
#include "sim/scenario.hpp"
#include "sim/zb_auto.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/report_check.hpp"
#include "tools/common/metrics_table.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/progress.hpp"
#include "tools/common/schedule_file.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/commands.hpp"
#include "tools/gpipe-run/run_flags.hpp"

namespace gpipe::tools {
namespace {

struct TrainFlags {
  RunFlags run;
  CudaFlags cuda;
  CpuFlags cpu;
  std::string schedule = "gpipe";
  std::string schedule_file;  // an IR JSON or torch CSV; empty: generate
  int stages = 0;
  int stages_per_rank = 0;  // 0: the schedule's own
  int microbatches = 0;
  std::int64_t batch = 0;
  int data_parallel = 1;    // D replicas, each of `batch` samples
  int tensor_parallel = 1;  // T parts of each rank's blocks
  int zero = 0;             // ZeRO's stage over the replicas
  int steps = 0;
  int measure_steps = 1;
  std::string recompute = "never";
  std::string trace;
  bool json = false;
  bool check_finite = false;
  std::string inject_fault;
};

std::string sizes_text(const std::vector<int>& sizes) {
  return sizes.front() == sizes.back() ? std::to_string(sizes.front())
                                       : fmt::format("{}-{}", sizes.back(), sizes.front());
}

void print_header(const TrainFlags& f, const models::Model& model, const plan::Plan& plan,
                  const std::string& searched, const exec::TrainOptions& t, const std::string& balanced_on,
                  const ProcessRole& role) {
  const auto& s = plan.schedule;
  std::cout << fmt::format("model       {} ({} layers, {} parameters)\n", model.spec,
                           model.layers.size(), model.params());
  exec::BackendOptions backend_options = f.cuda.options();
  backend_options.threads_per_rank = t.threads_per_rank;
  std::cout << fmt::format("backend     {}\n", describe_backend(f.run.backend, backend_options, plan.schedule, role));
  std::cout << fmt::format(
      "schedule    {}, {} stages on {} ranks, {} micro-batches of {} samples (batch {}), "
      "recompute {}\n",
      s.name, s.num_stages, s.num_ranks, s.num_microbatches, sizes_text(plan.microbatch_sizes),
      plan.batch, schedules::to_string(s.recompute));
  if (t.tensor_parallel > 1) {
    std::cout << fmt::format("tensor par. each rank's blocks split over {} processes (heads and feed-forward columns, "
                             "Megatron-LM's split), their partial sums all-reduced over MPI; embeddings and heads "
                             "whole in each\n",
                             t.tensor_parallel);
  }
  if (s.data_parallel > 1) {
    const std::string how =
        t.zero == 0 ? fmt::format("each stage's gradients summed over its {} copies ({} all-reduce in place, in "
                                  "pieces of at most 25 MB) after its last backward",
                                  s.data_parallel, f.run.backend == "cuda" ? "NCCL" : "MPI")
                    : fmt::format("ZeRO {}: each stage's gradients reduce-scattered over its {} copies (MPI, in place, "
                                  "in pieces of at most 25 MB) after its last backward; each copy keeps the optimizer "
                                  "state of its 1/{} and updates it, then all-gathers the weights in STEP",
                                  t.zero, s.data_parallel, s.data_parallel);
    std::cout << fmt::format("replicas    {} of the pipeline (global batch {}), {}\n", s.data_parallel,
                             plan.batch * s.data_parallel, how);
  }
  if (!searched.empty()) std::cout << fmt::format("searched    kept {}\n", searched);
  std::cout << fmt::format("partition   {} ({}{})\n", models::to_string(plan.partition), f.run.partition,
                           f.run.partition == "balanced" ? " on " + balanced_on : "");
  std::cout << fmt::format("optimizer   {}, lr {}, seed {}, {} steps\n\n",
                           models::to_string(t.optimizer.kind), t.optimizer.learning_rate, t.seed, t.steps);
}

// The device's own peak beside the allocator's exact peak per rank.
std::string device_memory_line(const exec::BackendRun& run) {
  std::string per_rank;
  for (std::int64_t bytes : run.allocator_peak_bytes) {
    per_rank += (per_rank.empty() ? "" : ", ") + format_bytes(bytes);
  }
  return fmt::format(
      "device memory: {} peak used on the GPU (cudaMemGetInfo: every process and library); "
      "the allocator's peak per rank (activations, messages, temporaries, weights): {}",
      format_bytes(run.device_peak_used_bytes), per_rank);
}

void check_schedule_flags(const TrainFlags& f, const CLI::App& cmd) {
  refuse_beside_schedule_file(cmd, f.schedule_file);
  if (f.schedule_file.empty() && (cmd.count("--stages") == 0 || cmd.count("--microbatches") == 0)) {
    throw InputError("give --stages K and --microbatches M, or --schedule-file FILE");
  }
}

int run_train(const TrainFlags& f, const CLI::App& cmd) {
  check_schedule_flags(f, cmd);
  f.cuda.check_backend(f.run.backend);
  f.cpu.check_backend(f.run.backend);
  require_backend(f.run.backend);
  const models::Model model = models::parse_model(f.run.model);
  plan::PlanRequest request;
  request.schedule = f.schedule;
  request.backward_order = *schedules::parse_backward_order(f.run.backward_order);
  request.recompute = *schedules::parse_recompute_policy(f.recompute);
  request.stages = f.stages;
  request.stages_per_rank = f.stages_per_rank;
  request.microbatches = f.microbatches;
  request.batch = f.batch;
  request.data_parallel = f.data_parallel;
  request.zero = f.zero;
  request.partition = models::parse_partition_spec(f.run.partition);
  // The executor runs the file's compute order with its own transfers (schedules/compute_order.hpp).
  if (!f.schedule_file.empty()) {
    request = plan::for_schedule(std::move(request), schedules::compute_order(read_checked_schedule(f.schedule_file)));
  }
  // The run's one split of N into M: its error (M > N) comes before any
  // profile is read, and the analytic profile is built at its sizes.
  std::vector<int> sizes = plan::split_batch(f.batch, request.microbatches);

  // The costs the partitioner balances: a measured profile when given, else
  // the model's analytic costs at this run's micro-batch sizes.
  profiles::Profile profile;
  std::string balanced_on;
  if (!f.run.profile.empty()) {
    const auto path = profiles::resolve_profile(f.run.profile);
    profile = profiles::load_profile(path);
    balanced_on = path.string();
  } else {
    profile = plan::balancing_profile(model, plan::distinct_sizes(sizes));
    balanced_on = "the model's analytic fp32 costs";
  }
  plan::check_request_for_model(model, profile, request);
  // zb-auto's plan is the simulator's search on these costs (no memory limit).
  std::string searched;
  plan::Plan plan;
  if (request.schedule == sim::kZbAuto) {
    sim::Prediction found = sim::predict(profile, sim::Scenario{.request = request, .conditions = {}}, false);
    plan = std::move(found.plan);
    searched = std::move(found.searched);
  } else {
    plan = plan::make_plan(profile, request, std::move(sizes));
  }

  exec::TrainOptions t;
  t.model = model;
  t.schedule = plan.schedule;
  t.partition = plan.partition;
  t.batch = f.batch;
  t.tensor_parallel = f.tensor_parallel;
  t.zero = f.zero;
  t.steps = f.steps;
  if (f.measure_steps > f.steps) {
    throw InputError(fmt::format("--measure-steps {} exceeds --steps {}", f.measure_steps, f.steps));
  }
  t.measured_steps = f.measure_steps;
  t.seed = f.run.seed;
  t.optimizer = f.run.optimizer_config();
  t.check_finite = f.check_finite;
  if (!f.trace.empty()) check_writable(f.trace, "--trace");
  if (!f.inject_fault.empty()) t.fault = exec::parse_fault_injection(f.inject_fault);
  t.watchdog_seconds = f.run.watchdog_seconds;
  const ProcessRole role = process_role(f.run.backend, plan.schedule, f.tensor_parallel);
  t.threads_per_rank = threads_per_rank(f.run.backend, f.cpu, plan.schedule.num_ranks, role.launch.launch);
  if (!role.launch.distributed) exec::check_no_replicas_in_process(t);
  // Text: one line per step on stdout as it ends. JSON: stdout holds the JSON
  // alone. On stderr (tools/common/progress.hpp), from the process that reports: the
  // estimate when the run is long, and on a terminal a bar with the loss,
  // unless the step lines already scroll by on the same terminal.
  std::optional<Progress> progress;
  const int width = static_cast<int>(std::to_string(f.steps).size());
  if (role.reports) {
    t.on_step = [&f, &progress, width](int step, double loss) {
      if (!f.json) std::cout << fmt::format("step {:>{}}/{}  loss {:.6f}", step + 1, width, f.steps, loss) << std::endl;
      progress->update(step + 1, fmt::format("loss {:.6f}", loss));
    };
  }
  if (!f.json && role.reports) print_header(f, model, plan, searched, t, balanced_on, role);

  progress.emplace(f.steps, "steps", std::cerr,
                   Progress::Options{.bar = stderr_is_terminal() && (f.json || isatty(STDOUT_FILENO) == 0)});
  const exec::BackendRun run = run_training(f.run.backend, f.cuda, t, role);
  if (!role.reports) return 0;  // the process of the loss stage reports for all
  const exec::TrainResult& result = run.result;
  timelines::check_report(result.metrics, "the measurement");
  if (!f.trace.empty()) {
    nlohmann::json trace = timelines::to_chrome_trace(result.timeline);
    if (run.add_kernel_events) run.add_kernel_events(trace);
    if (role.launch.distributed) {
      trace["otherData"]["clock"] = {{"method", run.clock.method}, {"max_error_ns", run.clock.max_error_ns}};
    }
    timelines::write_chrome_trace(trace, f.trace);
  }
  if (!run.note.empty()) std::cerr << "note: " << run.note << "\n";
  if (f.json) {
    std::vector<double> step_times_us;
    for (const std::int64_t ns : result.step_times_ns) step_times_us.push_back(static_cast<double>(ns) / 1e3);
    const nlohmann::json out{{"losses", result.losses},
                             {"metrics", timelines::to_json(result.metrics)},
                             {"step_times_us", step_times_us}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  const std::string which = f.measure_steps > 1 ? fmt::format("the step of median time of the last {}", f.measure_steps)
                                                : std::string("last step");
  std::cout << fmt::format("\n{}, measured ({}):\n", which, run.where);
  std::cout << format_metrics_summary(result.metrics, plan.schedule.name);
  // The rows above are one replica's, as the simulator's are; the cluster's
  // as gpipe-sim run says it.
  if (const int d = plan.schedule.data_parallel; d > 1) {
    std::cout << fmt::format("cluster     global batch {} ({} replicas of {}): {:.1f} samples/s\n", d * plan.batch, d,
                             plan.batch, d * result.metrics.throughput_samples_per_s);
  }
  std::cout << format_rank_table(result.metrics, plan.partition,
                                 fmt::format("static ({}, fp32)", models::to_string(t.optimizer.kind)),
                                 plan.schedule.stage_to_rank);
  if (!run.allocator_peak_bytes.empty()) std::cout << "\n" << device_memory_line(run) << "\n";
  if (!f.trace.empty()) std::cout << "\ntrace written to " << f.trace << " (open it in Perfetto)\n";
  return 0;
}

}  // namespace

Subcommand add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model through a pipeline schedule (cpu: a thread per rank, with --threads-per-rank helpers; cuda: a rank per "
               "SM partition of one GPU) and measure it: loss per step, then step time, bubble, "
               "utilisation and memory of the last step");
  f->run.add_to(*cmd, "Profile of the model (gpipe-run profile) whose costs --partition balanced balances");
  // Required unless --schedule-file gives them (run_train checks).
  cmd->add_option("--stages,-K", f->stages, "Number of pipeline ranks K (each holds V stages)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--stages-per-rank,-V", f->stages_per_rank, "Stages per rank V of the interleaved and V-shaped schedules (the model is cut into K x V stages; default: the schedule's own)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--microbatches,-M", f->microbatches, "Micro-batches per mini-batch M")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--schedule-file", f->schedule_file,
                  "Train the schedule of this IR JSON or torch CSV file (K, its stages and M from the file; the "
                  "executor runs its compute order, with its own transfers, each receive just before its "
                  "consumer)")
      ->check(nonempty_path())
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch,-N", f->batch, "Samples per mini-batch N, split over the M micro-batches")
      ->required()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  cmd->add_option("--data-parallel", f->data_parallel,
                  "Pipeline replicas D, each training on its own N samples (global batch D x N): each stage's "
                  "gradients are summed over its D copies after its last backward, before its step (cpu: K x D "
                  "processes under mpirun or srun)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--zero", f->zero,
                  "ZeRO's stage over the --data-parallel replicas: 0, or 1 (each replica keeps the optimizer state of "
                  "a 1/D share of every stage's values: gradients reduce-scattered, the share updated, the weights "
                  "all-gathered in STEP; gpipe-sim predicts 2 and 3 too)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--tensor-parallel", f->tensor_parallel,
                  "Split each rank's transformer or llama blocks over T processes (Megatron-LM's split: heads and "
                  "feed-forward columns, partial sums all-reduced; embeddings and heads whole in each): K x T x D "
                  "processes under mpirun or srun")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--steps", f->steps, "Training steps (one mini-batch and one optimizer step each)")
      ->required()
      ->check(CLI::Range(1, 100000000));
  cmd->add_option("--measure-steps", f->measure_steps,
                  "Measure the last N steps: the metrics and --trace are of the one of median time, --json "
                  "lists every one's time")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--schedule", f->schedule,
                  "Schedule (zb-auto: the simulator's search on the profile's costs)")
      ->check(CLI::IsMember(sim::predictable_schedule_names()))
      ->capture_default_str();
  cmd->add_option("--recompute", f->recompute, "Re-materialisation policy")
      ->check(CLI::IsMember(schedules::recompute_policy_names()))
      ->capture_default_str();
  cmd->add_option("--trace", f->trace,
                  "Write the last step's measured timeline as a Chrome trace (cuda with cupti: "
                  "with the GPU's kernels)")
      ->check(nonempty_path());
  f->cpu.add_to(*cmd);
  f->cuda.add_to(*cmd);
  cmd->add_flag("--json", f->json, "Print {\"losses\": [...], \"metrics\": {...}, \"step_times_us\": [...]} only");
  cmd->add_flag("--check-finite", f->check_finite, "Fail the run on a non-finite loss or gradient");
  cmd->add_option("--inject-fault", f->inject_fault,
                  "For testing: RANK:ACTION makes rank RANK fail at ACTION (e.g. 1:1F0); "
                  "RANK:ACTION:stall makes it hang there until the watchdog ends the run; "
                  "RANK:ACTION:oom makes it run out of memory there");
  return {cmd, [f, cmd] { return run_train(*f, *cmd); }};
}

}  // namespace gpipe::tools
