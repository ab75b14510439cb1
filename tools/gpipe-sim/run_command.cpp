// gpipe-sim run: predict one configuration's step time, bubble, utilisation
// and memory, as a table (default), JSON (--json) and a Chrome trace (--trace).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "models/checkpointing.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "sim/data_parallel.hpp"
#include "sim/scenario.hpp"
#include "timelines/chrome_trace.hpp"
#include "timelines/report_check.hpp"
#include "timelines/serving_trace.hpp"
#include "tools/common/metrics_table.hpp"
#include "tools/common/path_flag.hpp"
#include "tools/common/units.hpp"
#include "tools/gpipe-sim/commands.hpp"
#include "tools/gpipe-sim/inference_flags.hpp"
#include "tools/gpipe-sim/inference_report.hpp"
#include "tools/gpipe-sim/model_profile_flags.hpp"
#include "tools/gpipe-sim/scenario_flags.hpp"

namespace gpipe::tools {
namespace {

using nlohmann::json;

json config_json(const sim::Prediction& p, const sim::Scenario& sc, const profiles::Profile& profile,
                 const std::string& profile_path) {
  return {{"profile", profile_path},
          {"device", profile.device},
          {"source", profile.source},
          {"dtype", profile.dtype},
          {"schedule", p.plan.schedule.name},
          {"stages", p.plan.schedule.num_stages},
          {"microbatches", p.plan.schedule.num_microbatches},
          {"batch", p.plan.batch},
          {"microbatch_sizes", p.plan.microbatch_sizes},
          {"recompute", std::string(schedules::to_string(p.plan.schedule.recompute))},
          {"partition", p.plan.partition.layers_per_stage},
          {"link",
           {{"latency_us", p.link_latency_us},
            {"bandwidth_GBps", p.link_bandwidth_GBps},
            {"sharing", std::string(sim::to_string(sc.conditions.link_sharing))}}},
          {"optimizer", std::string(models::to_string(sc.request.optimizer))},
          {"memory_limit_bytes", sc.conditions.memory_limit_bytes ? json(*sc.conditions.memory_limit_bytes) : json()},
          {"searched", p.searched.empty() ? json() : json(p.searched)},
          {"overlap_f_b", sc.conditions.overlap_share ? json(*sc.conditions.overlap_share) : json(nullptr)},
          {"tensor_parallel", profile.tensor_parallel},
          {"sequence_parallel", profile.sequence_parallel},
          {"context_parallel", profile.context_parallel},
          {"data_parallel", sc.request.data_parallel},
          {"zero", sc.request.zero},
          {"data_parallel_link", p.data_parallel_link
                                     ? json{{"latency_us", p.data_parallel_link->latency_us},
                                            {"bandwidth_GBps", p.data_parallel_link->bandwidth_GBps}}
                                     : json(nullptr)},
          {"placement", p.placement.empty() ? json(nullptr) : json(p.placement)}};
}

// "parallel    TP 8 (sequence parallel) x PP 4 x DP 2 = 64 GPUs, ZeRO 1" and,
// with data parallelism, the largest stage reduction and the cluster's
// throughput; nothing for one GPU a stage and one replica.
std::string parallel_lines(const sim::Prediction& p, const sim::Scenario& sc, const profiles::Profile& profile) {
  const int t = profile.tensor_parallel;
  const int c = profile.context_parallel;
  const int d = sc.request.data_parallel;
  if (t == 1 && c == 1 && d == 1 && p.placement.empty()) return {};
  const int k = p.plan.schedule.num_ranks;
  std::string out = fmt::format("parallel    TP {}{}{} x PP {} x DP {} = {} GPUs{}; every number below is one GPU's\n", t,
                                profile.sequence_parallel ? " (sequence parallel)" : "",
                                c > 1 ? fmt::format(" x CP {}", c) : "", k, d, t * c * k * d,
                                sc.request.zero > 0 ? fmt::format(", ZeRO {}", sc.request.zero) : "");
  if (!p.placement.empty()) out += fmt::format("cluster     {}\n", p.placement);
  const int group = p.plan.schedule.data_parallel;  // D x C: who reduces a stage's gradients
  if (group > 1 && p.data_parallel_link) {
    // The gradients as reduced: fp32 main gradients of a 16-bit profile are twice its weights.
    std::vector<std::int64_t> bytes = sim::stage_gradient_bytes(profile, p.plan.partition);
    const int widening = models::gradient_bytes_per_element(profile.dtype, sc.request.fp32_main_grads) /
                         models::bytes_per_element(profile.dtype);
    for (std::int64_t& b : bytes) b *= widening;
    const sim::DataParallelism dp{.degree = group, .zero = sc.request.zero, .link = *p.data_parallel_link,
                                  .bucket_bytes = sc.conditions.gradient_bucket_bytes};
    std::size_t largest = 0;
    for (std::size_t s = 0; s < bytes.size(); ++s) largest = bytes[s] > bytes[largest] ? s : largest;
    out += fmt::format(
        "reduction   each stage's {}gradients over its {} ({}, buckets of {}) on {} us + {} GB/s: up to "
        "{} (stage {}, {})\n",
        widening > 1 ? "fp32 " : "",
        c > 1 ? fmt::format("{} replicas x {} context GPUs", d, c) : fmt::format("{} replicas", d),
        sc.request.zero == 0 ? "all-reduce" : "reduce-scatter",
        format_bytes(dp.bucket_bytes),
        dp.link.latency_us, dp.link.bandwidth_GBps, format_time_us(sim::bucketed_reduction_ns(dp, bytes[largest]) / 1e3),
        largest, format_bytes(bytes[largest]));
    const double step_s = static_cast<double>(p.metrics.step_time_ns) / 1e9;
    out += fmt::format("cluster     global batch {} ({} replicas of {}): {:.1f} samples/s\n", d * p.plan.batch, d,
                       p.plan.batch, static_cast<double>(d * p.plan.batch) / step_s);
  }
  return out;
}

// Percentiles over the jittered runs, beside the deterministic numbers above.
void print_stochastic(const sim::StochasticResult& r) {
  const auto row = [](const char* name, const sim::Spread& s, double deterministic, auto format) {
    std::cout << fmt::format("{:<15} p5 {}  p50 {}  p95 {}  (mean {}, min {}, max {}; deterministic {})\n",
                             name, format(s.p5), format(s.p50), format(s.p95), format(s.mean),
                             format(s.min), format(s.max), format(deterministic));
  };
  std::cout << fmt::format("over {} runs (jitter CV {}, seed {}; nearest-rank percentiles)\n", r.runs, r.cv,
                           r.seed);
  row("step time", r.step_time_us, r.deterministic.step_time_us, [](double us) { return format_time_us(us); });
  row("throughput", r.throughput_samples_per_s, r.deterministic.throughput_samples_per_s,
      [](double v) { return fmt::format("{:.1f}/s", v); });
  row("bubble", r.bubble_fraction, r.deterministic.bubble_fraction,
      [](double f) { return fmt::format("{:.2f} %", 100 * f); });
  std::cout << "\n";
}

void print_table(const sim::Prediction& p, const sim::Scenario& sc, const profiles::Profile& profile,
                 const std::string& profile_path) {
  const auto& m = p.metrics;
  const auto& s = p.plan.schedule;
  const bool even = p.plan.microbatch_sizes.front() == p.plan.microbatch_sizes.back();
  std::cout << fmt::format("profile     {} ({}, {}, {})\n", profile_path, profile.source,
                           profile.device, profile.dtype);
  std::cout << fmt::format(
      "schedule    {}, {} stages on {} ranks, {} micro-batches of {} samples (batch {}), "
      "recompute {}\n",
      s.name, s.num_stages, s.num_ranks, s.num_microbatches,
      even ? std::to_string(p.plan.microbatch_sizes.front())
           : fmt::format("{}-{}", p.plan.microbatch_sizes.back(), p.plan.microbatch_sizes.front()),
      p.plan.batch, p.plan.checkpointing ? fmt::format("full ({})", models::describe(*p.plan.checkpointing))
                                : std::string(schedules::to_string(s.recompute)));
  if (!p.searched.empty()) {
    std::cout << fmt::format("searched    kept {}{}\n", p.searched,
                             sc.conditions.memory_limit_bytes
                                 ? fmt::format(", within {} per rank", format_bytes(*sc.conditions.memory_limit_bytes))
                                 : "");
  }
  std::cout << fmt::format("partition   {} ({})\n", models::to_string(p.plan.partition),
                           models::to_string(sc.request.partition));
  if (sc.conditions.overlap_share) {
    std::cout << fmt::format("overlap     F&B pairs concurrently, each at {} of the compute stream\n",
                             *sc.conditions.overlap_share);
  }
  if (!profile.contention.empty() && p.plan.schedule.num_ranks > 1) {
    std::vector<std::string> points;
    for (const profiles::ContentionPoint& c : profile.contention) {
      points.push_back(fmt::format("+{:.1f} % beside {}", 100 * c.slowdown, c.busy_peers));
    }
    std::cout << fmt::format("contention  {} other rank(s) computing (the profile's): each action priced by the "
                             "ranks busy beside it\n",
                             fmt::join(points, ", "));
  }
  if (s.tied_embedding && s.num_stages > 1) {
    const std::int64_t tied = profile.tied_bytes();
    const bool local = s.rank_of(schedules::Stage{0}) == s.rank_of(schedules::Stage{s.num_stages - 1});
    std::cout << fmt::format(
        "tied        stages 0 and {} share the token table: each posts its {} gradient to the other before "
        "its step ({})\n",
        s.num_stages - 1, format_bytes(tied),
        local ? "one rank holds both: no transfer"
              : fmt::format("{:.2f} ms on the link", (p.link_latency_us + static_cast<double>(tied) /
                                                                             (p.link_bandwidth_GBps * 1e3)) / 1e3));
  }
  std::cout << parallel_lines(p, sc, profile);
  const std::string between_nodes =
      sc.conditions.cluster
          ? fmt::format(" inside a node, {} us + bytes at {} GB/s between nodes{}",
                        sc.conditions.cluster->inter_node.latency_us, sc.conditions.cluster->inter_node.bandwidth_GBps,
                        sc.conditions.cluster->scatter_gather && profile.tensor_parallel > 1 && !profile.sequence_parallel
                            ? fmt::format(" (scattered over the stage's {} NICs, gathered inside the node)",
                                          profile.tensor_parallel)
                            : "")
          : "";
  std::cout << fmt::format("link        {} us + bytes at {} GB/s{}, {}\n\n", p.link_latency_us,
                           p.link_bandwidth_GBps, between_nodes,
                           sc.conditions.link_sharing == sim::LinkSharing::fifo
                               ? "one message at a time (fifo)"
                               : "concurrent messages share the bandwidth (shared)");
  std::cout << format_metrics_summary(m, p.plan.schedule.name);
  if (p.stochastic) print_stochastic(*p.stochastic);
  std::cout << format_rank_table(
      m, p.plan.partition, fmt::format("static ({}, {})", models::to_string(sc.request.optimizer), profile.dtype),
      s.stage_to_rank);
}

// "memory      every rank fits in 81.24 GB (NVIDIA H100 80GB HBM3's 85.52 GB
// less 5 %)", or the ranks over it.
std::string memory_check(const timelines::Metrics& m, const MemoryLimit& limit) {
  std::string over;
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const std::int64_t total = m.ranks[r].peak_activation_bytes + m.ranks[r].static_bytes;
    if (total > limit.bytes) over += fmt::format("{}rank {} needs {}", over.empty() ? "" : ", ", r, format_bytes(total));
  }
  const std::string what = fmt::format("{} ({})", format_bytes(limit.bytes), limit.origin);
  if (over.empty()) return fmt::format("\nmemory      every rank fits in {}\n", what);
  return fmt::format("\nmemory      OVER the limit of {}: {}\n", what, over);
}

// The same for an inference stream: each rank's peak (state included) and weights.
std::string memory_check(const timelines::ServingMetrics& m, const MemoryLimit& limit) {
  std::string over;
  for (const auto& r : m.ranks) {
    const std::int64_t total = r.peak_activation_bytes + r.static_bytes;
    if (total > limit.bytes) over += fmt::format("{}rank {} needs {}", over.empty() ? "" : ", ", r.rank, format_bytes(total));
  }
  const std::string what = fmt::format("{} ({})", format_bytes(limit.bytes), limit.origin);
  if (over.empty()) return fmt::format("\nmemory      every rank fits in {}\n", what);
  return fmt::format("\nmemory      OVER the limit of {}: {}\n", what, over);
}

struct RunFlags {
  ScenarioFlags scenario;
  InferenceFlags inference;
  ModelProfileFlags model;  // --model SPEC --device KEY instead of --profile
  std::string trace;
  bool json = false;
};

int run_inference(const RunFlags& f, const CLI::App& cmd) {
  const sim::inference::Scenario sc = f.inference.scenario(f.scenario, cmd);
  if (!f.scenario.memory_limit.empty() && f.scenario.memory_limit != "device") {
    (void)parse_bytes(f.scenario.memory_limit, "--memory-limit");
  }
  const std::string path = profiles::resolve_profile(f.scenario.fixed.profile).string();
  const profiles::Profile profile = profiles::load_profile(path);
  const std::optional<MemoryLimit> limit = memory_limit_of(f.scenario.memory_limit, profile);
  if (!f.trace.empty()) check_writable(f.trace, "--trace");
  const sim::inference::Prediction p = sim::inference::predict(profile, sc, !f.trace.empty());
  if (!f.trace.empty()) timelines::write_chrome_trace(timelines::serving_chrome_trace(p.run, p.metrics), f.trace);
  if (f.json) {
    std::cout << inference_json(p, sc, profile, path).dump(2) << "\n";
    return 0;
  }
  std::cout << format_inference(p, sc, profile, path);
  if (limit) std::cout << memory_check(p.metrics, *limit);
  if (!f.trace.empty()) std::cout << "\ntrace written to " << f.trace << " (open it in Perfetto)\n";
  return 0;
}

int run(const RunFlags& f, const CLI::App& cmd) {
  if (f.inference.inference()) {
    if (ClusterFlags::any_given(cmd)) {
      throw InputError("--workload inference: an inference stream is one pipeline of one GPU a stage; "
                       "--tensor-parallel, --data-parallel, --zero and the cluster's flags plan training");
    }
    if (f.model.given()) {
      throw InputError("--workload inference takes --profile; make one with gpipe-sim profile --model");
    }
    return run_inference(f, cmd);
  }
  f.inference.check_flags(cmd);
  sim::Scenario sc = f.scenario.scenario(cmd);
  const profiles::Profile profile =
      f.model.given() ? f.model.make(sc, f.scenario.fixed.cluster, cmd)
                      : profiles::load_profile(profiles::resolve_profile(f.scenario.fixed.profile));
  const std::string path = f.model.given() ? f.model.describe(profile)
                                           : profiles::resolve_profile(f.scenario.fixed.profile).string();
  const std::optional<MemoryLimit> limit = memory_limit_of(f.scenario.memory_limit, profile);
  if (limit) sc.conditions.memory_limit_bytes = limit->bytes;
  if (!f.trace.empty()) check_writable(f.trace, "--trace");  // before the simulation, not after
  const sim::Prediction p = sim::predict(profile, sc, !f.trace.empty());
  timelines::check_report(p.metrics, "the prediction");
  if (p.stochastic) {
    for (const auto& m : p.stochastic->per_run) timelines::check_report(m, "a jittered run");
  }
  if (!f.trace.empty()) timelines::write_chrome_trace(p.timeline, f.trace);
  const std::string note = unpriced_note(p.plan.schedule, sc.conditions);
  if (f.json) {
    json out{{"config", config_json(p, sc, profile, path)}, {"metrics", timelines::to_json(p.metrics)}};
    if (p.stochastic) out["stochastic"] = sim::to_json(*p.stochastic);
    if (!note.empty()) out["notes"] = json::array({note});
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(p, sc, profile, path);
    std::cout << runtime_overhead_line(f.scenario.fixed);
    if (limit) std::cout << memory_check(p.metrics, *limit);
    if (!note.empty()) std::cout << "\n" << note << "\n";
    if (!f.trace.empty()) std::cout << "\ntrace written to " << f.trace << " (open it in Perfetto)\n";
  }
  return 0;
}

}  // namespace

Subcommand add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Predict one configuration: step time, bubble, per-rank utilisation and memory (training), or "
      "throughput, latency and memory per rank (--workload inference)");
  flags->scenario.add_to(*cmd);
  flags->inference.add_to(*cmd);
  flags->model.add_to(*cmd);
  cmd->add_option("--trace", flags->trace, "Write the predicted timeline as a Chrome trace (Perfetto)")
      ->check(nonempty_path());
  cmd->add_flag("--json", flags->json, "Print the configuration and metrics as JSON");
  return {cmd, [flags, cmd] { return run(*flags, *cmd); }};
}

}  // namespace gpipe::tools
