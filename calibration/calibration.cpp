#include "calibration/calibration.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "exec/cpu/cpu_backend.hpp"
#include "exec/runtime/run_settings.hpp"
#include "plan/microbatches.hpp"
#include "plan/model_profile.hpp"
#include "profiles/median_profile.hpp"
#include "profiles/stage_costs.hpp"
#include "sim/scenario.hpp"
#include "timelines/report_check.hpp"

namespace gpipe::calibration {
namespace {

std::int64_t max_peak(const timelines::Metrics& m) {
  std::int64_t peak = 0;
  for (const auto& r : m.ranks) peak = std::max(peak, r.peak_activation_bytes);
  return peak;
}

// A configuration of the grid: its prediction, and what its runs measured.
struct Configuration {
  CalibrationRow row;
  const profiles::Profile* profile = nullptr;
  sim::Prediction prediction;
  std::vector<exec::TrainResult> runs;  // one a round; only the timelines and step times are kept
};

Configuration predict_one(const profiles::Profile& profile, const CalibrationOptions& options,
                          const plan::PlanRequest& request) {
  Configuration c;
  c.row.request = request;
  c.row.context_parallel = options.model.context_parallel;
  c.profile = &profile;
  try {
    plan::check_request_for_model(options.model, profile, request);
    sim::Conditions conditions;
    conditions.replicas_sharing_machine = options.replicas_sharing_machine;
    c.prediction = sim::predict(profile, sim::Scenario{.request = request, .conditions = conditions},
                                /*record_timeline=*/true);
    // What the executor cannot train is skipped as what cannot exist is.
    exec::check_zero(request.zero, request.data_parallel, options.model, c.prediction.plan.partition.num_stages());
  } catch (const InputError& e) {
    c.row.skipped = e.what();
  }
  return c;
}

// Each configuration predicted again from `profile` (the rounds' median),
// with the partition it has been training with, so that only the times move.
void repredict(std::vector<Configuration>& configurations, const profiles::Profile& profile,
               const CalibrationOptions& options) {
  for (Configuration& c : configurations) {
    if (!c.row.ok()) continue;
    plan::PlanRequest request = c.row.request;
    request.partition = models::PartitionSpec{.method = models::PartitionMethod::counts,
                                              .counts = c.prediction.plan.partition.layers_per_stage};
    Configuration again = predict_one(profile, options, request);
    if (!again.row.ok()) throw RunError("validate: a configuration the first profile predicted, its median "
                                        "did not: " + again.row.skipped);
    c.prediction = std::move(again.prediction);
    c.profile = &profile;
  }
}

exec::TrainResult train_once(const CalibrationOptions& options, const sim::Prediction& p) {
  exec::TrainOptions t;
  t.model = options.model;
  t.schedule = p.plan.schedule;
  t.partition = p.plan.partition;
  t.checkpointing = p.plan.checkpointing;
  t.batch = p.plan.batch;
  t.zero = options.grid.base.zero;
  t.steps = options.steps;
  // Every step but the first (cold caches, first-touch page faults) is measured.
  t.measured_steps = options.steps - 1;
  t.seed = options.seed;
  t.optimizer = options.optimizer;
  t.watchdog_seconds = options.watchdog_seconds;
  t.threads_per_rank = options.threads_per_rank;
  exec::TrainResult measured = options.train ? options.train(t) : exec::cpu::train(t);
  measured.weights.clear();  // kept for every round: only the timeline and times matter here
  measured.losses.clear();
  return measured;
}

// The row from every round's run: the step times pooled, and the measured
// step nearest their median (each run offers its own median step) diffed.
void finish_row(Configuration& c) {
  CalibrationRow& row = c.row;
  const sim::Prediction& p = c.prediction;
  for (const exec::TrainResult& run : c.runs) {
    for (const std::int64_t ns : run.step_times_ns) row.step_us.push_back(static_cast<double>(ns) / 1e3);
  }
  row.noise = step_noise(row.step_us);
  const auto distance = [&row](const exec::TrainResult& run) {
    return std::abs(static_cast<double>(timelines::makespan_ns(run.timeline)) / 1e3 - row.noise.median_us);
  };
  const exec::TrainResult& nearest = *std::ranges::min_element(
      c.runs, [&](const exec::TrainResult& a, const exec::TrainResult& b) { return distance(a) < distance(b); });
  row.partition = p.plan.partition.layers_per_stage;
  row.request.stages_per_rank = p.plan.schedule.num_stages / p.plan.schedule.num_ranks;
  row.microbatch_sizes = p.plan.microbatch_sizes;
  row.predicted = p.metrics;
  row.measured = nearest.metrics;
  timelines::check_report(row.predicted, "a validation row's prediction");
  timelines::check_report(row.measured, "a validation row's measurement");
  row.diff = sim::diff_timelines(p.timeline, nearest.timeline, /*worst=*/5);
  for (const int size : plan::distinct_sizes(row.microbatch_sizes)) {
    const auto stages = profiles::stage_costs(*c.profile, row.partition, size);
    for (std::size_t s = 0; s + 1 < stages.size(); ++s) {
      const std::int64_t bytes = stages[s].output_bytes;
      row.message_bytes_min = row.message_bytes_min == 0 ? bytes : std::min(row.message_bytes_min, bytes);
      row.message_bytes_max = std::max(row.message_bytes_max, bytes);
    }
  }
  row.predicted_peak_activation_bytes = max_peak(row.predicted);
  row.measured_peak_activation_bytes = max_peak(row.measured);
  c.runs.clear();
}

// NaN (a measured step of 0) as an empty cell, never "nan".
std::string number(double value, int decimals) {
  return std::isnan(value) ? std::string() : fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::vector<CalibrationRow> run_calibration(const profiles::Profile& profile,
                                          const CalibrationOptions& options) {
  const plan::RequestGrid& grid = options.grid;
  if (grid.schedules.empty() || grid.recompute.empty() || grid.stages.empty() ||
      grid.microbatches.empty()) {
    throw InputError("validate: every list of the grid (--schedule, --recompute, --stages, "
                     "--microbatches) needs a value");
  }
  if (options.steps < 2) {
    throw InputError(fmt::format("--steps must be at least 2 so that the compared step runs warm, "
                                 "got {}",
                                 options.steps));
  }
  if (grid.base.batch < 1) throw InputError(fmt::format("--batch must be at least 1, got {}", grid.base.batch));
  if (options.rounds < 1) throw InputError(fmt::format("--rounds must be at least 1, got {}", options.rounds));
  plan::check_profile_matches(options.model, profile);  // one bad profile is no skipped row
  std::vector<Configuration> configurations;
  for (plan::PlanRequest& request : grid.requests()) {
    request.optimizer = options.optimizer.kind;
    const profiles::Profile& row_profile = options.profile_for ? options.profile_for(request.stages) : profile;
    if (&row_profile != &profile) plan::check_profile_matches(options.model, row_profile);
    configurations.push_back(predict_one(row_profile, options, request));
  }
  const auto runnable = static_cast<int>(
      std::ranges::count_if(configurations, [](const Configuration& c) { return c.row.ok(); }));
  const bool remeasure = options.measure_profile && !options.profile_for && options.rounds > 1;
  std::vector<profiles::Profile> measured{profile};  // one a round, when remeasured
  profiles::Profile median;
  for (int round = 0; round < options.rounds; ++round) {
    const bool last = round + 1 == options.rounds;
    if (remeasure && round > 0) {
      measured.push_back(options.measure_profile(round + 1));
      plan::check_profile_matches(options.model, measured.back());
    }
    if (remeasure && last) {
      median = profiles::median_profile(measured);
      if (options.on_median_profile) options.on_median_profile(median);
      repredict(configurations, median, options);
    }
    int index = 0;
    for (Configuration& c : configurations) {
      if (c.row.ok()) {
        if (options.on_run) options.on_run(round, index++, runnable);
        c.runs.push_back(train_once(options, c.prediction));
        if (last) finish_row(c);
      }
      if (last && options.on_row) options.on_row(c.row);
    }
  }
  std::vector<CalibrationRow> rows;
  for (Configuration& c : configurations) rows.push_back(std::move(c.row));
  return rows;
}

std::string calibration_csv(const std::vector<CalibrationRow>& rows) {
  std::string out =
      std::string(plan::kGridCsvHead) + ",predicted_step_us,measured_step_us,step_time_error_pct,predicted_bubble,measured_bubble,"
      "bubble_fraction_analytic,bubble_error_points,predicted_peak_activation_bytes,"
      "measured_peak_activation_bytes,peak_activation_equal,transfers,predicted_transfer_us,measured_transfer_us,"
      "transfer_error_pct,transfer_median_abs_error_pct,step_samples,measured_step_q1_us,measured_step_q3_us,"
      "noise_band_pct,outside_band_points,data_parallel,reductions,predicted_reduction_us,measured_reduction_us,"
      "reduction_error_pct,tensor_parallel,tp_collective_actions,predicted_tp_collective_us,measured_tp_collective_us,"
      "tp_collective_error_pct,zero,context_parallel,cp_collective_actions,predicted_cp_collective_us,"
      "measured_cp_collective_us,cp_collective_error_pct\n";
  for (const CalibrationRow& r : rows) {
    const plan::PlanRequest& req = r.request;
    out += plan::grid_row_csv(req, r.skipped, 36);
    if (!r.ok()) continue;
    const sim::TransferError& t = r.diff.transfers;
    const sim::TransferError& g = r.diff.reductions;
    const sim::TransferError& tp = r.diff.tensor_parallel;
    const sim::TransferError& cp = r.diff.context_parallel;
    out += fmt::format("{},{},{},ok,,{:.3f},{:.3f},{},{:.6f},{:.6f},{},{},{},{},{},{},{:.3f},{:.3f},{},{},{},{:.3f},"
                       "{:.3f},{:.3f},{:.3f},{},{},{:.3f},{:.3f},{},{},{},{:.3f},{:.3f},{},{},{},{},{:.3f},{:.3f},{}\n",
                       r.microbatch_sizes.front(), req.batch,
                       plan::csv_cell(fmt::format("{}", fmt::join(r.partition, ","))), r.predicted_step_us(),
                       r.noise.median_us, number(r.step_error_pct(), 3),
                       r.diff.predicted_bubble, r.diff.measured_bubble,
                       plan::csv_number(r.predicted.bubble_fraction_analytic, 6), number(r.diff.bubble_error_points, 3),
                       r.predicted_peak_activation_bytes, r.measured_peak_activation_bytes,
                       r.peak_activation_equal() ? 1 : 0, t.count, t.predicted_mean_us, t.measured_mean_us,
                       t.count > 0 ? number(t.mean_error_pct, 3) : std::string(),
                       t.count > 0 ? number(t.median_abs_error_pct, 3) : std::string(), r.noise.samples,
                       r.noise.q1_us, r.noise.q3_us, r.noise.band_pct(), r.outside_band_points(),
                       req.data_parallel, g.count, g.predicted_mean_us, g.measured_mean_us,
                       g.count > 0 ? number(g.mean_error_pct, 3) : std::string(), r.diff.predicted_info.tensor_parallel,
                       tp.count, tp.predicted_mean_us, tp.measured_mean_us,
                       tp.count > 0 ? number(tp.mean_error_pct, 3) : std::string(), req.zero, r.context_parallel,
                       cp.count, cp.predicted_mean_us, cp.measured_mean_us,
                       cp.count > 0 ? number(cp.mean_error_pct, 3) : std::string());
  }
  return out;
}

nlohmann::json calibration_json(const std::vector<CalibrationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const CalibrationRow& r : rows) {
    nlohmann::json row = plan::grid_row_json(r.request, r.skipped);
    // Where the grid has replicas, how many, and ZeRO's stage over them.
    if (r.request.data_parallel > 1) row["data_parallel"] = r.request.data_parallel;
    if (r.request.zero > 0) row["zero"] = r.request.zero;
    if (r.context_parallel > 1) row["context_parallel"] = r.context_parallel;
    if (r.ok()) {
      row["micro_batch_size"] = r.microbatch_sizes.front();
      row["partition"] = r.partition;
      row["predicted"] = timelines::to_json(r.predicted);
      row["measured"] = timelines::to_json(r.measured);
      row["diff"] = sim::to_json(r.diff);
      row["step_us"] = r.step_us;
      row["noise"] = {{"samples", r.noise.samples},
                      {"median_us", r.noise.median_us},
                      {"q1_us", r.noise.q1_us},
                      {"q3_us", r.noise.q3_us},
                      {"band_pct", r.noise.band_pct()},
                      {"step_error_pct", r.step_error_pct()},
                      {"outside_band_points", r.outside_band_points()}};
      row["peak_activation_equal"] = r.peak_activation_equal();
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace gpipe::calibration
