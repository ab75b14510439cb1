#include "calibration/serving_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "exec/inference/cpu_serving.hpp"
#include "plan/inference_plan.hpp"
#include "plan/model_profile.hpp"
#include "profiles/median_profile.hpp"
#include "sim/inference/predict.hpp"

namespace gpipe::calibration {
namespace {

struct Config {
  int stages = 0;
  int in_flight = 0;
  int b = 0;
};

std::vector<Config> configs_of(const ServingCalibrationOptions& o) {
  std::vector<Config> out;
  for (const int k : o.stages) {
    for (const int b_in_flight : o.in_flight.empty() ? std::vector<int>{k} : o.in_flight) {
      for (const int b : o.micro_batch_sizes) out.push_back({k, b_in_flight, b});
    }
  }
  return out;
}

bool same_peaks(const timelines::ServingMetrics& a, const timelines::ServingMetrics& b) {
  if (a.ranks.size() != b.ranks.size()) return false;
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    if (a.ranks[r].peak_activation_bytes != b.ranks[r].peak_activation_bytes) return false;
  }
  return true;
}

std::int64_t largest_peak(const timelines::ServingMetrics& m) {
  std::int64_t peak = 0;
  for (const auto& r : m.ranks) peak = std::max(peak, r.peak_activation_bytes);
  return peak;
}

double mean_abs_latency_error_pct(const timelines::ServingRun& predicted, const timelines::ServingRun& measured) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < predicted.items.size() && i < measured.items.size(); ++i) {
    const auto meas = static_cast<double>(measured.items[i].latency_ns());
    if (meas <= 0) continue;
    sum += std::abs(static_cast<double>(predicted.items[i].latency_ns()) - meas) / meas;
    ++n;
  }
  return n == 0 ? 0 : 100 * sum / static_cast<double>(n);
}

}  // namespace

std::vector<ServingCalibrationRow> run_serving_calibration(const profiles::Profile& first_profile,
                                                         const ServingCalibrationOptions& o) {
  if (o.stages.empty() || o.micro_batch_sizes.empty()) throw InputError("--stages and --micro-batch-sizes: give at least one value");
  if (o.rounds < 1) throw InputError(fmt::format("--rounds must be at least 1, got {}", o.rounds));
  plan::check_profile_matches(o.model, first_profile);
  const std::vector<Config> configs = configs_of(o);
  std::vector<ServingCalibrationRow> rows(configs.size());
  // Each row's partition, from the first profile; the rounds' measured runs.
  std::vector<std::vector<timelines::ServingRun>> runs(configs.size());
  std::vector<std::vector<timelines::ServingMetrics>> measured(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ServingCalibrationRow& row = rows[i];
    row.stages = configs[i].stages;
    row.in_flight = configs[i].in_flight;
    row.micro_batch_size = configs[i].b;
    try {
      schedules::Workload w = o.workload;
      w.in_flight = row.in_flight;
      schedules::validate_workload(w);
      row.partition = plan::make_inference_plan(first_profile, {.stages = row.stages, .micro_batch_size = row.micro_batch_size,
                                                                .partition = o.partition})
                          .partition.layers_per_stage;
    } catch (const InputError& e) {
      row.skipped = e.what();
    }
  }
  std::vector<profiles::Profile> profiles{first_profile};
  const auto count = static_cast<int>(std::ranges::count_if(rows, [](const auto& r) { return r.ok(); }));
  for (int round = 0; round < o.rounds; ++round) {
    if (round > 0 && o.measure_profile) profiles.push_back(o.measure_profile(round));
    int index = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      ServingCalibrationRow& row = rows[i];
      if (!row.ok()) continue;
      if (o.on_run) o.on_run(round, index++, count);
      exec::inference::ServingRequest rq;
      rq.model = &o.model;
      rq.layers_per_stage = row.partition;
      rq.micro_batch_size = row.micro_batch_size;
      rq.workload = o.workload;
      rq.workload.in_flight = row.in_flight;
      rq.seed = o.seed;
      rq.threads_per_rank = o.threads_per_rank;
      exec::inference::ServingResult result = o.serve ? o.serve(rq) : exec::inference::run_cpu_serving(rq);
      measured[i].push_back(timelines::compute_serving_metrics(result.run, row.in_flight, row.micro_batch_size,
                                                              result.static_bytes));
      runs[i].push_back(std::move(result.run));
    }
  }
  const profiles::Profile profile = profiles.size() > 1 ? profiles::median_profile(profiles) : first_profile;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ServingCalibrationRow& row = rows[i];
    if (!row.ok()) continue;
    sim::inference::Scenario sc;
    sc.request = {.stages = row.stages, .micro_batch_size = row.micro_batch_size,
                  .partition = {.method = models::PartitionMethod::counts, .counts = row.partition}};
    sc.workload = o.workload;
    sc.workload.in_flight = row.in_flight;
    const sim::inference::Prediction p = sim::inference::predict(profile, sc, false);
    row.predicted = p.metrics;
    std::vector<double> throughput, p50;
    for (const auto& m : measured[i]) {
      throughput.push_back(m.throughput_items_per_s);
      p50.push_back(m.latency.p50_us);
    }
    row.throughput = step_noise(throughput);
    row.latency_p50 = step_noise(p50);
    // The round whose throughput is nearest the median.
    std::size_t nearest = 0;
    for (std::size_t r = 0; r < throughput.size(); ++r) {
      if (std::abs(throughput[r] - row.throughput.median_us) < std::abs(throughput[nearest] - row.throughput.median_us)) {
        nearest = r;
      }
    }
    row.measured = measured[i][nearest];
    row.item_latency_mean_abs_error_pct = mean_abs_latency_error_pct(p.run, runs[i][nearest]);
    row.predicted_peak_activation_bytes = largest_peak(row.predicted);
    row.measured_peak_activation_bytes = largest_peak(row.measured);
    row.peaks_equal = same_peaks(row.predicted, row.measured);
    if (o.on_row) o.on_row(row);
  }
  return rows;
}

std::string serving_calibration_csv(const std::vector<ServingCalibrationRow>& rows) {
  std::string out =
      "stages,in_flight,micro_batch_size,requests,partition,status,reason,predicted_throughput_items_per_s,"
      "measured_throughput_items_per_s,throughput_error_pct,throughput_band_pct,throughput_outside_band_points,"
      "predicted_latency_p50_us,measured_latency_p50_us,latency_error_pct,latency_band_pct,"
      "latency_outside_band_points,predicted_latency_p99_us,measured_latency_p99_us,"
      "item_latency_mean_abs_error_pct,predicted_peak_activation_bytes,measured_peak_activation_bytes,"
      "peak_activation_equal\n";
  for (const ServingCalibrationRow& r : rows) {
    if (!r.ok()) {
      std::string reason = r.skipped;
      std::ranges::replace(reason, '"', '\'');
      out += fmt::format("{},{},{},,,skipped,\"{}\",,,,,,,,,,,,,,,,\n", r.stages, r.in_flight, r.micro_batch_size, reason);
      continue;
    }
    out += fmt::format("{},{},{},{},\"{}\",ok,,{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.stages, r.in_flight,
                       r.micro_batch_size, r.predicted.requests, fmt::join(r.partition, ","),
                       r.predicted.throughput_items_per_s, r.throughput.median_us, r.throughput_error_pct(),
                       r.throughput.band_pct(), r.throughput.outside_points(r.predicted.throughput_items_per_s),
                       r.predicted.latency.p50_us, r.latency_p50.median_us, r.latency_error_pct(), r.latency_p50.band_pct(),
                       r.latency_p50.outside_points(r.predicted.latency.p50_us), r.predicted.latency.p99_us,
                       r.measured.latency.p99_us, r.item_latency_mean_abs_error_pct, r.predicted_peak_activation_bytes,
                       r.measured_peak_activation_bytes, r.peak_activation_equal() ? "yes" : "no");
  }
  return out;
}

nlohmann::json serving_calibration_json(const std::vector<ServingCalibrationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ServingCalibrationRow& r : rows) {
    nlohmann::json row{{"stages", r.stages}, {"in_flight", r.in_flight}, {"micro_batch_size", r.micro_batch_size},
                       {"status", r.ok() ? "ok" : "skipped"}};
    if (!r.ok()) {
      row["reason"] = r.skipped;
    } else {
      row["partition"] = r.partition;
      row["predicted"] = timelines::to_json(r.predicted);
      row["measured"] = timelines::to_json(r.measured);
      row["throughput"] = {{"median_items_per_s", r.throughput.median_us},
                           {"band_pct", r.throughput.band_pct()},
                           {"error_pct", r.throughput_error_pct()}};
      row["latency_p50"] = {{"median_us", r.latency_p50.median_us},
                            {"band_pct", r.latency_p50.band_pct()},
                            {"error_pct", r.latency_error_pct()}};
      row["item_latency_mean_abs_error_pct"] = r.item_latency_mean_abs_error_pct;
      row["peak_activation_equal"] = r.peak_activation_equal();
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace gpipe::calibration
