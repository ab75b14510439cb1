// Calibration, the simulator against real runs (`gpipe-run validate`): for
// each configuration of a grid (schedule x recompute x K x M, one mini-batch
// of N samples) predict it from a profile, train it for a few steps (CPU
// threads, or one GPU) with the SAME partition and schedule, and diff the last (warm) step's
// measured timeline with the prediction. Configurations that cannot exist
// (K > layers, M > N) stay in the result as skipped rows with the reason, as
// in a sweep, so the grid stays whole.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/train_options.hpp"
#include "models/model.hpp"
#include "plan/grid.hpp"
#include "profiles/profile.hpp"
#include "schedules/metrics.hpp"
#include "sim/diff.hpp"

namespace gpipe::exec {

struct CalibrationRow {
  plan::PlanRequest request;
  std::string skipped;  // why the configuration cannot exist; empty when run
  std::vector<int> partition;
  std::vector<int> microbatch_sizes;  // largest first
  schedules::Metrics predicted;
  schedules::Metrics measured;  // of the step of median time among all but the first
  sim::TimelineDiff diff;       // predicted vs measured, action by action
  // The largest peak over ranks of each; equal when the executor keeps exactly
  // what the simulator's memory rules say.
  std::int64_t predicted_peak_activation_bytes = 0;
  std::int64_t measured_peak_activation_bytes = 0;

  [[nodiscard]] bool ok() const { return skipped.empty(); }
  [[nodiscard]] bool peak_activation_equal() const {
    return predicted_peak_activation_bytes == measured_peak_activation_bytes;
  }
};

struct CalibrationOptions {
  models::Model model;
  // The grid of plan requests. Its base holds the batch, partition and
  // backward order, the same for every row; its optimizer (static memory in
  // the prediction) is set from `optimizer`. Each row is predicted with the
  // profile's own link.
  plan::Grid grid;
  int steps = 2;  // at least 2: the first step runs cold and is not compared
  std::uint64_t seed = 1;
  OptimizerConfig optimizer;
  double watchdog_seconds = 60.0;
  // Where each configuration trains: cpu::train (CPU threads) when empty;
  // gpipe-run sets the CUDA trainer for --backend cuda.
  std::function<TrainResult(const TrainOptions&)> train;
  // When set, each row predicts with profile_for(K) instead of the profile
  // given: the CUDA backend measures one per SM partition size, since a stage
  // of a K-stage run has 1/K of the GPU.
  std::function<const profiles::Profile&(int stages)> profile_for;
  // cpu: the threads each rank computes with, in every row (TrainOptions::threads_per_rank).
  int threads_per_rank = 1;
  // Called with each row as soon as it is done (rows come in grid order).
  std::function<void(const CalibrationRow&)> on_row;
};

// Rows in grid order: schedule, recompute, K, M (M fastest). InputError for a
// bad grid (empty lists, steps < 2) or a profile of another model; RunError
// from a run that fails (a worker fault, a stall).
[[nodiscard]] std::vector<CalibrationRow> run_calibration(const profiles::Profile& profile,
                                                        const CalibrationOptions& options);

// The CSV plots/validation.py reads, one row per configuration:
//   schedule,recompute,stages,microbatches,micro_batch_size,batch,partition,
//   status,reason,predicted_step_us,measured_step_us,step_time_error_pct,
//   predicted_bubble,measured_bubble,bubble_fraction_analytic,bubble_error_points,
//   predicted_peak_activation_bytes,measured_peak_activation_bytes,peak_activation_equal,
//   transfers,predicted_transfer_us,measured_transfer_us,transfer_error_pct
// (the last four: the link model alone, sim/diff.hpp TransferError)
// (a skipped row leaves the metric cells empty; the error is (pred - meas) / meas).
[[nodiscard]] std::string calibration_csv(const std::vector<CalibrationRow>& rows);
[[nodiscard]] nlohmann::json calibration_json(const std::vector<CalibrationRow>& rows);

}  // namespace gpipe::exec
