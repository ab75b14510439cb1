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
#include "models/context_parallel.hpp"
#include "models/checkpointing.hpp"
#include "exec/runtime/fault.hpp"
#include "exec/runtime/run_settings.hpp"
#include "exec/runtime/train_options.hpp"
#include "exec/runtime/trainer.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
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
#include "tools/gpipe-run/train_flags.hpp"

namespace gpipe::tools {
namespace {

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
      plan.batch, plan.checkpointing ? fmt::format("full ({})", models::describe(*plan.checkpointing))
                                : std::string(schedules::to_string(s.recompute)));
  if (t.tensor_parallel > 1) {
    std::cout << fmt::format("tensor par. each rank's blocks split over {} processes (heads and feed-forward columns, "
                             "Megatron-LM's split), their partial sums all-reduced over MPI; embeddings and heads "
                             "whole in each\n",
                             t.tensor_parallel);
  }
  if (const int c = model.context_parallel; c > 1) {
    std::cout << fmt::format("context par. each sequence split over {} processes ({} tokens each: chunks i and {}-i of "
                             "{}), keys and values all-gathered before attention and their gradients "
                             "reduce-scattered over MPI; weights whole in each, their gradients summed over {}\n",
                             c, model.seq / c, 2 * c - 1, 2 * c, s.data_parallel);
  }
  if (const int d = t.replicas(); d > 1) {
    const char* when = s.reduce_after_backward ? "after its rank's last backward" : "after its last backward";
    const std::string how =
        t.zero == 0 ? fmt::format("each stage's gradients summed over its {} copies ({} all-reduce in place, in "
                                  "pieces of at most 25 MB) {}",
                                  d, f.run.backend == "cuda" ? "NCCL" : "MPI", when)
                    : fmt::format("ZeRO {}: each stage's gradients reduce-scattered over its {} copies (MPI, in place, "
                                  "in pieces of at most 25 MB) {}; each copy keeps the optimizer "
                                  "state of its 1/{} and updates it, then all-gathers the weights in STEP",
                                  t.zero, d, when, d);
    std::cout << fmt::format("replicas    {} of the pipeline (global batch {}), {}\n", d, plan.batch * d, how);
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

// What the run trains: the flags' request, planned on a measured profile when
// given, else on the model's analytic costs at this run's micro-batch sizes;
// zb-auto's plan is the simulator's search on these costs (no memory limit).
struct TrainPlan {
  plan::Plan plan;
  std::string searched;     // zb-auto's choice, for the header
  std::string balanced_on;  // the costs --partition balanced balanced
};

TrainPlan plan_training(const TrainFlags& f, const CLI::App& cmd, const models::Model& model) {
  // The executor runs a file's compute order with its own transfers (schedules/compute_order.hpp).
  plan::PlanRequest request = f.pipeline.request(cmd, [](schedules::Schedule s) { return schedules::compute_order(s); });
  request.backward_order = *schedules::parse_backward_order(f.run.backward_order);
  request.partition = models::parse_partition_spec(f.run.partition);
  request.data_parallel = f.data_parallel;
  request.zero = f.zero;
  request.reduce_after_backward = f.reduce_after_backward;
  // The run's one split of N into M: its error (M > N) comes before any
  // profile is read, and the analytic profile is built at its sizes.
  std::vector<int> sizes = plan::split_batch(f.pipeline.batch, request.microbatches);
  TrainPlan out;
  profiles::Profile profile;
  if (!f.run.profile.empty()) {
    const auto path = profiles::resolve_profile(f.run.profile);
    profile = profiles::load_profile(path);
    out.balanced_on = path.string();
    if (profile.context_parallel != model.context_parallel) {
      throw InputError(fmt::format("--profile: it is one GPU's of a context-parallel group of {}, and the run's is {} "
                                   "(measure one with gpipe-run profile --context-parallel {})",
                                   profile.context_parallel, model.context_parallel, model.context_parallel));
    }
    if (profile.context_form != models::ContextParallelForm::all_gather) {
      throw InputError(fmt::format("--profile: its context group shares keys and values in the {} form; the "
                                   "executor runs Llama 3's all-gather (profile it with --context-parallel-form "
                                   "all-gather, or measure it with gpipe-run profile)",
                                   models::to_string(profile.context_form)));
    }
  } else {
    profile = plan::balancing_profile(model, plan::distinct_sizes(sizes));
    out.balanced_on = "the model's analytic fp32 costs";
  }
  plan::check_request_for_model(model, profile, request);
  if (request.schedule == sim::kZbAuto) {
    sim::Prediction found = sim::predict(profile, sim::Scenario{.request = request, .conditions = {}}, false);
    out.plan = std::move(found.plan);
    out.searched = std::move(found.searched);
  } else {
    out.plan = plan::make_plan(profile, request, std::move(sizes));
  }
  return out;
}

// The executor's options for the plan, but for the step callback.
exec::TrainOptions train_options(const TrainFlags& f, const models::Model& model, const plan::Plan& plan) {
  exec::TrainOptions t;
  t.model = model;
  t.schedule = plan.schedule;
  t.partition = plan.partition;
  t.checkpointing = plan.checkpointing;
  t.batch = f.pipeline.batch;
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
  return t;
}

// What the reporting process prints and writes of the run: the trace, then
// the JSON alone, or the measured step's metrics and ranks.
void report_training(const TrainFlags& f, const plan::Plan& plan, const exec::TrainOptions& t,
                     const exec::BackendRun& run, const ProcessRole& role) {
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
    return;
  }
  const std::string which = f.measure_steps > 1 ? fmt::format("the step of median time of the last {}", f.measure_steps)
                                                : std::string("last step");
  std::cout << fmt::format("\n{}, measured ({}):\n", which, run.where);
  std::cout << format_metrics_summary(result.metrics, plan.schedule.name);
  // The rows above are one replica's, as the simulator's are; the cluster's
  // as gpipe-sim run says it.
  if (const int d = t.replicas(); d > 1) {
    std::cout << fmt::format("cluster     global batch {} ({} replicas of {}): {:.1f} samples/s\n", d * plan.batch, d,
                             plan.batch, d * result.metrics.throughput_samples_per_s);
  }
  std::cout << format_rank_table(result.metrics, plan.partition,
                                 fmt::format("static ({}, fp32)", models::to_string(t.optimizer.kind)),
                                 plan.schedule.stage_to_rank);
  if (!run.allocator_peak_bytes.empty()) std::cout << "\n" << device_memory_line(run) << "\n";
  if (!f.trace.empty()) std::cout << "\ntrace written to " << f.trace << " (open it in Perfetto)\n";
}

int run_train(const TrainFlags& f, const CLI::App& cmd) {
  f.pipeline.check(cmd);
  f.cuda.check_backend(f.run.backend);
  f.cpu.check_backend(f.run.backend);
  require_backend(f.run.backend);
  // With context parallelism, the model as each process's layers compute it.
  const models::Model model =
      models::split_context_parallel(models::parse_model(f.run.model), {.degree = f.context_parallel});
  const TrainPlan planned = plan_training(f, cmd, model);
  const plan::Plan& plan = planned.plan;
  exec::TrainOptions t = train_options(f, model, plan);
  const ProcessRole role = process_role(f.run.backend, plan.schedule, f.tensor_parallel * f.context_parallel);
  t.threads_per_rank = threads_per_rank(f.run.backend, f.cpu, plan.schedule.num_ranks, role.launch.launch);
  exec::check_context_parallel(t, f.run.backend);  // what it cannot split, before how many processes
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
  if (!f.json && role.reports) print_header(f, model, plan, planned.searched, t, planned.balanced_on, role);
  progress.emplace(f.steps, "steps", std::cerr,
                   Progress::Options{.bar = stderr_is_terminal() && (f.json || isatty(STDOUT_FILENO) == 0)});
  const exec::BackendRun run = run_training(f.run.backend, f.cuda, t, role);
  if (role.reports) report_training(f, plan, t, run, role);  // the process of the loss stage reports for all
  return 0;
}

}  // namespace

Subcommand add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model through a pipeline schedule (cpu: a thread per rank, with --threads-per-rank helpers; cuda: a rank per "
               "SM partition of one GPU) and measure it: loss per step, then step time, bubble, "
               "utilisation and memory of the last step");
  f->add_to(*cmd);
  return {cmd, [f, cmd] { return run_train(*f, *cmd); }};
}

}  // namespace gpipe::tools
