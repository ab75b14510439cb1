#include "sim/inference/sweep.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/partition.hpp"

namespace gpipe::sim::inference {
namespace {

bool within(const SweepRow& r, std::optional<double> latency_limit_us, std::optional<std::int64_t> memory_limit) {
  return r.ok() && (!latency_limit_us || r.metrics.latency.p99_us <= *latency_limit_us) &&
         (!memory_limit || r.peak_memory_bytes <= *memory_limit);
}

// A CSV cell: the reason may hold commas and quotes.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& grid) {
  std::vector<SweepRow> rows;
  for (const int k : grid.stages) {
    for (const int b_in_flight : grid.in_flight) {
      for (const int b : grid.micro_batch_sizes) {
        SweepRow& row = rows.emplace_back();
        row.stages = k;
        row.in_flight = b_in_flight;
        row.micro_batch_size = b;
        Scenario sc = grid.base;
        sc.request.stages = k;
        sc.request.micro_batch_size = b;
        sc.workload.in_flight = b_in_flight;
        try {
          const Prediction p = predict(profile, sc, false);
          row.metrics = p.metrics;
          row.partition = models::to_string(p.plan.partition);
          for (const RankLoad& r : p.metrics.ranks) {
            row.peak_memory_bytes = std::max(row.peak_memory_bytes, r.peak_activation_bytes + r.static_bytes);
          }
        } catch (const InputError& e) {
          row.skipped = e.what();
        }
      }
    }
  }
  return rows;
}

std::vector<const SweepRow*> best_per_stage_count(const std::vector<SweepRow>& rows,
                                                  std::optional<double> latency_limit_us,
                                                  std::optional<std::int64_t> memory_limit) {
  std::vector<const SweepRow*> best;
  for (const SweepRow& r : rows) {
    if (!within(r, latency_limit_us, memory_limit)) continue;
    auto same_k = std::ranges::find_if(best, [&](const SweepRow* b) { return b->stages == r.stages; });
    if (same_k == best.end()) {
      best.push_back(&r);
    } else if (r.metrics.throughput_samples_per_s > (*same_k)->metrics.throughput_samples_per_s) {
      *same_k = &r;
    }
  }
  std::ranges::sort(best, {}, &SweepRow::stages);
  return best;
}

std::string sweep_csv_head() {
  return "stages,in_flight,micro_batch_size,requests,partition,status,reason,step_time_us,"
         "throughput_items_per_s,throughput_samples_per_s,steady_throughput_items_per_s,latency_first_us,"
         "latency_p50_us,latency_p90_us,latency_p99_us,latency_max_us,bottleneck_stage,utilization_max,"
         "peak_memory_bytes,within_limits\n";
}

std::string sweep_csv_row(const SweepRow& r, std::optional<double> latency_limit_us,
                          std::optional<std::int64_t> memory_limit) {
  if (!r.ok()) {
    return fmt::format("{},{},{},,,skipped,{},,,,,,,,,,,,,\n", r.stages, r.in_flight, r.micro_batch_size,
                       quoted(r.skipped));
  }
  const timelines::ServingMetrics& m = r.metrics;
  double utilization_max = 0;
  for (const RankLoad& load : m.ranks) utilization_max = std::max(utilization_max, load.utilization);
  return fmt::format("{},{},{},{},{},ok,,{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.stages, r.in_flight,
                     r.micro_batch_size, m.requests, quoted(r.partition), m.step_time_us, m.throughput_items_per_s,
                     m.throughput_samples_per_s,
                     m.steady_throughput_items_per_s ? fmt::format("{}", *m.steady_throughput_items_per_s) : "",
                     m.latency.first_us, m.latency.p50_us, m.latency.p90_us, m.latency.p99_us, m.latency.max_us,
                     m.bottleneck_stage, utilization_max, r.peak_memory_bytes,
                     within(r, latency_limit_us, memory_limit) ? "yes" : "no");
}

}  // namespace gpipe::sim::inference
