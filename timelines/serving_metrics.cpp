#include "timelines/serving_metrics.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/percentile.hpp"

namespace gpipe::timelines {
namespace {

double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

Latency latency_of(const std::vector<ItemTimes>& items) {
  std::vector<double> sorted;
  sorted.reserve(items.size());
  double sum = 0;
  for (const ItemTimes& item : items) {
    sorted.push_back(us(item.latency_ns()));
    sum += sorted.back();
  }
  std::ranges::sort(sorted);
  return {.first_us = us(items.front().latency_ns()),
          .mean_us = sum / static_cast<double>(sorted.size()),
          .p50_us = nearest_rank(sorted, 50),
          .p90_us = nearest_rank(sorted, 90),
          .p99_us = nearest_rank(sorted, 99),
          .max_us = sorted.back()};
}

}  // namespace

ServingMetrics compute_serving_metrics(const ServingRun& run, int in_flight, int micro_batch_size,
                        std::span<const std::int64_t> static_bytes) {
  if (run.items.empty()) throw std::invalid_argument("compute_serving_metrics: no items");
  const auto R = static_cast<std::int64_t>(run.items.size());
  const std::int64_t B = in_flight;
  const auto K = static_cast<int>(run.busy_ns.size());
  ServingMetrics m;
  m.requests = static_cast<int>(R);
  m.in_flight = in_flight;
  m.micro_batch_size = micro_batch_size;
  std::int64_t first_arrival = run.items.front().arrival_ns;
  std::int64_t last_completion = 0;
  for (const ItemTimes& item : run.items) {
    first_arrival = std::min(first_arrival, item.arrival_ns);
    last_completion = std::max(last_completion, item.completed_ns);
  }
  m.step_time_ns = last_completion - first_arrival;
  m.step_time_us = us(m.step_time_ns);
  if (m.step_time_ns > 0) {
    m.throughput_items_per_s = static_cast<double>(R) * 1e9 / static_cast<double>(m.step_time_ns);
    m.throughput_samples_per_s = m.throughput_items_per_s * micro_batch_size;
  }
  if (R > 2 * B) {
    const std::int64_t span_ns = run.items[static_cast<std::size_t>(R - B - 1)].completed_ns -
                                 run.items[static_cast<std::size_t>(B - 1)].completed_ns;
    if (span_ns > 0) m.steady_throughput_items_per_s = static_cast<double>(R - 2 * B) * 1e9 / static_cast<double>(span_ns);
  }
  m.latency = latency_of(run.items);

  double slowest_us = 0;
  for (int r = 0; r < K; ++r) {
    const auto i = static_cast<std::size_t>(r);
    RankLoad& load = m.ranks.emplace_back();
    load.rank = r;
    load.busy_us = us(run.busy_ns[i]);
    load.utilization = m.step_time_ns > 0 ? static_cast<double>(run.busy_ns[i]) / static_cast<double>(m.step_time_ns) : 0;
    load.forward_us = load.busy_us / static_cast<double>(R);
    load.peak_activation_bytes = run.peak_bytes[i];
    load.state_bytes = run.state_bytes[i];
    load.static_bytes = static_bytes.empty() ? 0 : static_bytes[i];
    if (run.busy_ns[i] > run.busy_ns[static_cast<std::size_t>(m.bottleneck_stage)]) m.bottleneck_stage = r;
    slowest_us = std::max(slowest_us, load.forward_us);
  }
  ClosedForms& c = m.closed_form;
  c.stage_time_us = slowest_us;
  c.first_latency_us = K * slowest_us;
  c.batch_time_us = static_cast<double>(B + K - 1) * slowest_us;
  if (slowest_us > 0) {
    c.steady_throughput_items_per_s = static_cast<double>(std::min<std::int64_t>(B, K)) * 1e6 / (K * slowest_us);
  }
  return m;
}

nlohmann::json to_json(const ServingMetrics& m) {
  using nlohmann::json;
  json ranks = json::array();
  for (const RankLoad& r : m.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"busy_us", r.busy_us},
                     {"utilization", r.utilization},
                     {"forward_us", r.forward_us},
                     {"peak_activation_bytes", r.peak_activation_bytes},
                     {"state_bytes", r.state_bytes},
                     {"static_bytes", r.static_bytes}});
  }
  const Latency& l = m.latency;
  const ClosedForms& c = m.closed_form;
  return {{"requests", m.requests},
          {"in_flight", m.in_flight},
          {"micro_batch_size", m.micro_batch_size},
          {"step_time_us", m.step_time_us},
          {"throughput_items_per_s", m.throughput_items_per_s},
          {"throughput_samples_per_s", m.throughput_samples_per_s},
          {"steady_throughput_items_per_s",
           m.steady_throughput_items_per_s ? json(*m.steady_throughput_items_per_s) : json(nullptr)},
          {"latency_us",
           {{"first", l.first_us}, {"mean", l.mean_us}, {"p50", l.p50_us}, {"p90", l.p90_us}, {"p99", l.p99_us},
            {"max", l.max_us}}},
          {"bottleneck_stage", m.bottleneck_stage},
          {"closed_form",
           {{"stage_time_us", c.stage_time_us},
            {"first_latency_us", c.first_latency_us},
            {"batch_time_us", c.batch_time_us},
            {"steady_throughput_items_per_s", c.steady_throughput_items_per_s}}},
          {"ranks", ranks}};
}

}  // namespace gpipe::timelines
