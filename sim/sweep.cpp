#include "sim/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedules/error.hpp"

namespace gpipe::sim {
namespace {

SweepRow simulate_row(const profiles::Profile& profile, const Scenario& sc) {
  SweepRow row;
  row.request = sc.request;
  try {
    Prediction p = predict(profile, sc, /*record_timeline=*/false);
    row.partition = p.plan.partition.layers_per_stage;
    row.request.stages_per_rank = p.plan.schedule.num_stages / p.plan.schedule.num_ranks;
    row.micro_batch_size = p.plan.microbatch_sizes.front();
    for (const auto& r : p.metrics.ranks) {
      row.peak_activation_bytes = std::max(row.peak_activation_bytes, r.peak_activation_bytes);
      row.static_bytes = std::max(row.static_bytes, r.static_bytes);
      row.peak_memory_bytes = std::max(row.peak_memory_bytes, r.peak_activation_bytes + r.static_bytes);
    }
    row.metrics = std::move(p.metrics);
  } catch (const InputError& e) {
    row.skipped = e.what();
  }
  return row;
}


std::string fits_cell(const SweepRow& row, std::optional<std::int64_t> limit) {
  if (!limit || !row.ok()) return "";
  return row.peak_memory_bytes <= *limit ? "1" : "0";
}

double min_utilization(const schedules::Metrics& m) {
  double u = m.ranks.empty() ? 0.0 : 1.0;
  for (const auto& r : m.ranks) u = std::min(u, r.utilization);
  return u;
}

}  // namespace

std::vector<SweepRow> run_sweep(const profiles::Profile& profile, const SweepGrid& sweep, int threads,
                                const SweepProgress& progress) {
  std::vector<Scenario> scenarios;
  for (plan::PlanRequest& request : sweep.grid.requests()) {
    scenarios.push_back(Scenario{std::move(request), sweep.conditions});
  }
  std::vector<SweepRow> rows(scenarios.size());
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < scenarios.size(); i = next++) {
      rows[i] = simulate_row(profile, scenarios[i]);
      ++done;
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(scenarios.size())));
  {
    std::vector<std::jthread> pool;
    for (int t = 1; t < n; ++t) pool.emplace_back(worker);
    if (progress) {
      // This thread reports while the pool works, then helps finish.
      while (done < scenarios.size() && next < scenarios.size()) {
        progress(done, scenarios.size());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    worker();
  }
  if (progress) progress(scenarios.size(), scenarios.size());
  return rows;
}

std::string sweep_csv(const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit) {
  std::string out = std::string(plan::kGridCsvHead) +
      ",step_time_us,bubble_fraction,bubble_fraction_analytic,bubble_time_over_ideal,"
      "throughput_samples_per_s,utilization_min,peak_activation_bytes,static_bytes,"
      "peak_memory_bytes,fits\n";
  for (const SweepRow& r : rows) {
    const plan::PlanRequest& req = r.request;
    out += plan::grid_row_csv(req, r.skipped, 10);
    if (!r.ok()) continue;
    const auto& m = r.metrics;
    out += fmt::format("{},{},{},ok,,{:.3f},{:.6f},{},{:.6f},{:.3f},{:.6f},{},{},{},{}\n",
                       r.micro_batch_size, req.batch, plan::csv_cell(fmt::format("{}", fmt::join(r.partition, ","))),
                       m.step_time_us, m.bubble_fraction, plan::csv_number(m.bubble_fraction_analytic, 6),
                       m.bubble_time_over_ideal, m.throughput_samples_per_s, min_utilization(m),
                       r.peak_activation_bytes, r.static_bytes, r.peak_memory_bytes,
                       fits_cell(r, memory_limit));
  }
  return out;
}

nlohmann::json sweep_json(const std::vector<SweepRow>& rows, std::optional<std::int64_t> memory_limit) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRow& r : rows) {
    nlohmann::json row = plan::grid_row_json(r.request, r.skipped);
    if (r.ok()) {
      row["micro_batch_size"] = r.micro_batch_size;
      row["partition"] = r.partition;
      row["metrics"] = schedules::to_json(r.metrics);
      row["peak_memory_bytes"] = r.peak_memory_bytes;
      if (memory_limit) row["fits"] = r.peak_memory_bytes <= *memory_limit;
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<const SweepRow*> best_per_stage_count(const std::vector<SweepRow>& rows,
                                                  std::optional<std::int64_t> memory_limit) {
  std::map<int, const SweepRow*> best;
  for (const SweepRow& r : rows) {
    if (!r.ok() || (memory_limit && r.peak_memory_bytes > *memory_limit)) continue;
    const SweepRow*& b = best[r.request.stages];
    if (b == nullptr || r.metrics.throughput_samples_per_s > b->metrics.throughput_samples_per_s) b = &r;
  }
  std::vector<const SweepRow*> out;
  for (const auto& [k, row] : best) out.push_back(row);
  return out;
}

}  // namespace gpipe::sim
