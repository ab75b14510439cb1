#include "tools/gpipe-sim/inference_report.hpp"

#include <fmt/format.h>

#include "models/partition.hpp"
#include "tools/common/units.hpp"

namespace gpipe::tools {
namespace {

using sim::inference::Latency;

std::string arrivals(const sim::inference::Workload& w) {
  if (w.arrival_interval_us) return fmt::format("open loop, one every {}", format_time_us(*w.arrival_interval_us));
  if (w.arrival_rate_per_s) return fmt::format("open loop, Poisson at {:g}/s (seed {})", *w.arrival_rate_per_s, w.seed);
  return "closed loop";
}

std::string latency_line(const Latency& l) {
  return fmt::format("first {}  p50 {}  p90 {}  p99 {}  max {}  (mean {})", format_time_us(l.first_us),
                     format_time_us(l.p50_us), format_time_us(l.p90_us), format_time_us(l.p99_us),
                     format_time_us(l.max_us), format_time_us(l.mean_us));
}

}  // namespace

std::string format_inference(const sim::inference::Prediction& p, const sim::inference::Scenario& sc,
                             const profiles::Profile& profile, const std::string& profile_path) {
  const timelines::ServingMetrics& m = p.metrics;
  const auto& w = sc.workload;
  const int K = p.plan.partition.num_stages();
  std::string out;
  out += fmt::format("profile     {} ({}, {}, {})\n", profile_path, profile.source, profile.device, profile.dtype);
  out += fmt::format("workload    inference: {} items of {} sample{}, {} with at most {} in flight\n", w.requests,
                     p.plan.micro_batch_size, p.plan.micro_batch_size == 1 ? "" : "s", arrivals(w), w.in_flight);
  out += fmt::format("partition   {} ({}, on the forward costs)\n", models::to_string(p.plan.partition),
                     models::to_string(sc.request.partition));
  out += fmt::format("link        {} us + bytes at {} GB/s, one message at a time (fifo)\n\n", p.link_latency_us,
                     p.link_bandwidth_GBps);
  out += fmt::format("step time   {} (first arrival to last completion)\n", format_time_us(m.step_time_us));
  out += fmt::format("throughput  {:.2f} items/s ({:.2f} samples/s)", m.throughput_items_per_s,
                     m.throughput_samples_per_s);
  out += m.steady_throughput_items_per_s
             ? fmt::format("; steady state {:.2f} items/s\n", *m.steady_throughput_items_per_s)
             : fmt::format("; no steady state (R = {} <= 2 B)\n", w.requests);
  out += "latency     " + latency_line(m.latency) + "\n";
  const auto& c = m.closed_form;
  out += fmt::format(
      "closed form {} equal stages of {} on free links: first item {}, a batch of B = {} {}, steady state "
      "min(B, K) / (K t) = {:.2f} items/s\n",
      K, format_time_us(c.stage_time_us), format_time_us(c.first_latency_us), w.in_flight,
      format_time_us(c.batch_time_us), c.steady_throughput_items_per_s);
  const auto& slow = m.ranks[static_cast<std::size_t>(m.bottleneck_stage)];
  out += fmt::format("bottleneck  stage {} ({} per item, busy {:.1f} % of the step)\n", m.bottleneck_stage,
                     format_time_us(slow.forward_us), 100 * slow.utilization);
  if (p.stochastic) {
    const auto& s = *p.stochastic;
    out += fmt::format("\nover {} runs (jitter CV {}, seed {}; nearest-rank percentiles of all their items)\n", s.runs,
                       s.cv, s.seed);
    out += "latency     " + latency_line(s.latency) + "\n";
    out += fmt::format("throughput  p5 {:.2f}  p50 {:.2f}  p95 {:.2f} items/s\n", s.throughput_items_per_s.p5,
                       s.throughput_items_per_s.p50, s.throughput_items_per_s.p95);
  }
  out += fmt::format("\n{:>4}  {:>6}  {:>12}  {:>11}  {:>8}  {:>12}  {:>12}  {:>12}\n", "rank", "layers", "forward/item",
                     "busy", "util", "peak act", "state", "weights");
  for (const auto& r : m.ranks) {
    out += fmt::format("{:>4}  {:>6}  {:>12}  {:>11}  {:>7.1f}%  {:>12}  {:>12}  {:>12}\n", r.rank,
                       p.plan.partition.layers_per_stage[static_cast<std::size_t>(r.rank)], format_time_us(r.forward_us),
                       format_time_us(r.busy_us), 100 * r.utilization, format_bytes(r.peak_activation_bytes),
                       format_bytes(r.state_bytes), format_bytes(r.static_bytes));
  }
  return out;
}

nlohmann::json inference_json(const sim::inference::Prediction& p, const sim::inference::Scenario& sc,
                              const profiles::Profile& profile, const std::string& profile_path) {
  using nlohmann::json;
  const auto& w = sc.workload;
  json arrival = w.arrival_interval_us ? json{{"interval_us", *w.arrival_interval_us}}
                 : w.arrival_rate_per_s ? json{{"rate_per_s", *w.arrival_rate_per_s}, {"seed", w.seed}}
                                        : json("closed");
  json out{{"config",
            {{"profile", profile_path},
             {"device", profile.device},
             {"source", profile.source},
             {"dtype", profile.dtype},
             {"workload", "inference"},
             {"stages", p.plan.partition.num_stages()},
             {"requests", w.requests},
             {"in_flight", w.in_flight},
             {"micro_batch_size", p.plan.micro_batch_size},
             {"arrival", arrival},
             {"partition", p.plan.partition.layers_per_stage},
             {"link", {{"latency_us", p.link_latency_us}, {"bandwidth_GBps", p.link_bandwidth_GBps}, {"sharing", "fifo"}}}}},
           {"metrics", timelines::to_json(p.metrics)}};
  if (p.stochastic) out["stochastic"] = sim::inference::to_json(*p.stochastic);
  return out;
}

}  // namespace gpipe::tools
