// gpipe-run infer: serve a serving run through K stages on CPU threads
// (exec/inference/cpu_serving.hpp) or SM partitions of one GPU
// (exec/cuda/inference/cuda_serving.hpp), the backend's serve(), or as K
// processes under mpirun or srun (exec/mpi/mpi_serving.hpp), forward only, and measure it: throughput,
// latency per item, utilisation and memory per rank, as gpipe-sim run
// --workload inference predicts them (timelines/serving_metrics.hpp). Under a
// launcher the last stage's process reports; the others print nothing.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "exec/registry/registry.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/dist/bootstrap.hpp"
#include "exec/mpi/mpi_serving.hpp"
#include "models/model_spec.hpp"
#include "models/partition.hpp"
#include "plan/inference_plan.hpp"
#include "plan/model_profile.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/serving_json.hpp"
#include "timelines/serving_metrics.hpp"
#include "timelines/serving_trace.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/seed_flag.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/commands.hpp"
#include "tools/gpipe-run/infer_flags.hpp"

namespace gpipe::tools {
namespace {

std::string arrivals(const schedules::Workload& w) {
  if (w.arrival_interval_us) return fmt::format("open loop, one every {}", format_time_us(*w.arrival_interval_us));
  if (w.arrival_rate_per_s) return fmt::format("open loop, Poisson at {:g}/s (seed {})", *w.arrival_rate_per_s, w.seed);
  return "closed loop";
}

void print_report(const timelines::ServingMetrics& m, const schedules::Workload& w, const models::Model& model,
                  const models::Partition& partition, const std::string& balanced_on, const std::string& device) {
  std::cout << fmt::format("model       {}\n", model.spec);
  std::cout << fmt::format("workload    inference: {} items of {} sample{}, {} with at most {} in flight\n",
                           w.requests, m.micro_batch_size, m.micro_batch_size == 1 ? "" : "s", arrivals(w), w.in_flight);
  std::cout << fmt::format("partition   {} (balanced on the forward costs of {})\n", models::to_string(partition), balanced_on);
  std::cout << fmt::format("where       cpu: {}\n\n", device);
  std::cout << fmt::format("step time   {} (first arrival to last completion)\n", format_time_us(m.step_time_us));
  std::cout << fmt::format("throughput  {:.2f} items/s ({:.2f} samples/s)", m.throughput_items_per_s,
                           m.throughput_samples_per_s);
  std::cout << (m.steady_throughput_items_per_s
                    ? fmt::format("; steady state {:.2f} items/s\n", *m.steady_throughput_items_per_s)
                    : fmt::format("; no steady state (R = {} <= 2 B)\n", w.requests));
  const auto& l = m.latency;
  std::cout << fmt::format("latency     first {}  p50 {}  p90 {}  p99 {}  max {}  (mean {})\n", format_time_us(l.first_us),
                           format_time_us(l.p50_us), format_time_us(l.p90_us), format_time_us(l.p99_us),
                           format_time_us(l.max_us), format_time_us(l.mean_us));
  const auto& slow = m.ranks[static_cast<std::size_t>(m.bottleneck_stage)];
  std::cout << fmt::format("bottleneck  stage {} ({} per item, busy {:.1f} % of the step)\n\n", m.bottleneck_stage,
                           format_time_us(slow.forward_us), 100 * slow.utilization);
  std::cout << fmt::format("{:>4}  {:>6}  {:>12}  {:>11}  {:>8}  {:>12}  {:>12}\n", "rank", "layers", "forward/item",
                           "busy", "util", "peak act", "weights");
  for (const auto& r : m.ranks) {
    std::cout << fmt::format("{:>4}  {:>6}  {:>12}  {:>11}  {:>7.1f}%  {:>12}  {:>12}\n", r.rank,
                             partition.layers_per_stage[static_cast<std::size_t>(r.rank)], format_time_us(r.forward_us),
                             format_time_us(r.busy_us), 100 * r.utilization, format_bytes(r.peak_activation_bytes),
                             format_bytes(r.static_bytes));
  }
}

int run_infer(const InferFlags& f, const CLI::App& cmd) {
  const exec::Backend& backend = exec::find_backend(f.backend);
  f.cuda.check_backend(f.backend);
  f.cpu.check_backend(f.backend);
  if (cmd.count("--stages") == 0) throw InputError("give --stages K");
  const models::Model model = models::parse_model(f.model);
  schedules::Workload w;
  w.requests = f.requests;
  w.in_flight = f.in_flight.value_or(f.stages);
  w.arrival_interval_us = f.arrival_interval_us;
  w.arrival_rate_per_s = f.arrival_rate;
  w.seed = f.arrival_seed;
  schedules::validate_workload(w);
  if (static_cast<std::int64_t>(w.requests) * f.stages > schedules::kMaxForwards) {
    throw InputError(fmt::format("--requests {} x --stages {} is more than the {} forwards a run records", w.requests,
                                 f.stages, schedules::kMaxForwards));
  }
  // What the partitioner balances: a measured profile when given, else the model's analytic costs.
  profiles::Profile profile;
  std::string balanced_on;
  if (!f.profile.empty()) {
    const auto path = profiles::resolve_profile(f.profile);
    profile = profiles::load_profile(path);
    plan::check_profile_matches(model, profile);
    balanced_on = path.string();
  } else {
    profile = plan::balancing_profile(model, std::vector<int>{f.micro_batch_size});
    balanced_on = "the model's analytic fp32 costs";
  }
  const plan::InferencePlan plan = plan::make_inference_plan(
      profile, {.stages = f.stages, .micro_batch_size = f.micro_batch_size,
                .partition = models::parse_partition_spec(f.partition)});
  if (!f.trace.empty()) check_writable(f.trace, "--trace");
  exec::inference::ServingRequest rq;
  rq.model = &model;
  rq.layers_per_stage = plan.partition.layers_per_stage;
  rq.micro_batch_size = f.micro_batch_size;
  rq.workload = w;
  rq.seed = f.seed;
  rq.warmup_items = f.warmup;
  rq.keep_outputs = f.json;  // the model's outputs go into the JSON
  // Under mpirun or srun with more than one process: a stage per process.
  const exec::LaunchInfo launch = exec::parse_launch_environment(exec::current_environment(), false);
  exec::inference::ServingResult result;
  std::optional<exec::ClockAgreement> clock;
  if (launch.world_size > 1 && f.backend != "cpu") {
    throw InputError(fmt::format("gpipe-run infer --backend {} serves its ranks on one GPU's SM partitions, in one "
                                 "process; under {}, a process per rank is --backend cpu's",
                                 f.backend, launch.launcher));
  }
  if (launch.world_size > 1) {
    rq.threads_per_rank = f.cpu.threads_for(launch.local_size);
    const std::string where = exec::cpu::processes_description(launch.world_size, launch.launcher,
                                                               rq.threads_per_rank,
                                                               exec::cpu::device_name(rq.threads_per_rank));
    exec::mpi::ServedProcess served = exec::mpi::serve_as_mpi_process(rq, launch.launcher, where);
    if (!served.result) return 0;  // the last stage's process reports for all
    result = std::move(*served.result);
    clock = served.clock;
  } else {
    rq.threads_per_rank = f.cpu.threads_for(f.stages);
    backend.require_available();
    result = backend.serve(rq, f.cuda.options());
  }
  const timelines::ServingMetrics metrics =
      timelines::compute_serving_metrics(result.run, w.in_flight, f.micro_batch_size, result.static_bytes);
  if (!f.trace.empty()) {
    nlohmann::json trace = timelines::serving_chrome_trace(result.run, metrics);
    if (clock) trace["otherData"]["clock"] = {{"method", clock->method}, {"max_error_ns", clock->max_error_ns}};
    timelines::write_chrome_trace(trace, f.trace);
  }
  if (f.json) {
    nlohmann::json out{{"config",
                        {{"model", model.spec},
                         {"device", result.run.timeline.info.device},
                         {"workload", "inference"},
                         {"stages", f.stages},
                         {"requests", w.requests},
                         {"in_flight", w.in_flight},
                         {"micro_batch_size", f.micro_batch_size},
                         {"partition", plan.partition.layers_per_stage}}},
                       {"metrics", timelines::to_json(metrics)}};
    // Per item, the model's output: its loss layer's value per sample.
    nlohmann::json outputs = nlohmann::json::array();
    for (const exec::Tensor& t : result.outputs) outputs.push_back(std::vector<float>(t.f32().begin(), t.f32().end()));
    out["outputs"] = std::move(outputs);
    out["run"] = timelines::serving_run_to_json(result.run);
    out["run"]["static_bytes"] = result.static_bytes;
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  print_report(metrics, w, model, plan.partition, balanced_on, result.run.timeline.info.device);
  if (!f.trace.empty()) std::cout << "\ntrace written to " << f.trace << " (open it in Perfetto)\n";
  return 0;
}

}  // namespace

Subcommand add_infer_command(CLI::App& app) {
  auto f = std::make_shared<InferFlags>();
  CLI::App* cmd = app.add_subcommand(
      "infer", "Serve an inference stream through K pipeline stages, forward only, and measure its throughput, "
               "latency per item and memory per rank (what gpipe-sim run --workload inference predicts)");
  f->add_to(*cmd);
  return {cmd, [f, cmd] { return run_infer(*f, *cmd); }};
}

}  // namespace gpipe::tools
