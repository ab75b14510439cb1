// Calibration, the simulator against real runs (`gpipe-run validate`): for
// each configuration of a grid (schedule x recompute x K x M, one mini-batch
// of N samples) predict it from a profile, train it for a few steps (CPU
// threads, or one GPU) with the SAME partition and schedule, and compare.
// The grid runs in rounds, every configuration once a round (A B C A B C, not
// A A B B C C), so that a slow minute of a shared machine spreads over all of
// them; a configuration's step time is the median of its warm steps over every
// round, and their interquartile range is its noise band (step_noise.hpp).
// The measured step nearest that median is diffed action by action with the
// prediction. Configurations that cannot exist (K > layers, M > N) stay in the
// result as skipped rows with the reason, as in a sweep, so the grid stays whole.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "calibration/step_noise.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/train_options.hpp"
#include "models/model.hpp"
#include "plan/request_grid.hpp"
#include "profiles/profile.hpp"
#include "sim/diff.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::calibration {

struct CalibrationRow {
  plan::PlanRequest request;
  std::string skipped;  // why the configuration cannot exist; empty when run
  std::vector<int> partition;
  std::vector<int> microbatch_sizes;  // largest first
  timelines::Metrics predicted;
  timelines::Metrics measured;  // of the measured step nearest the median step time
  sim::TimelineDiff diff;       // predicted vs that step, action by action
  // Every warm step's time over every round, in the order they ran, and
  // their median and quartiles. The row's step error is against the median.
  std::vector<double> step_us;
  StepNoise noise;
  // The smallest and largest message between stages (activations and their
  // gradients alike), as the profile prices them; 0 with one stage.
  std::int64_t message_bytes_min = 0;
  std::int64_t message_bytes_max = 0;
  // The largest peak over ranks of each; equal when the executor keeps exactly
  // what the simulator's memory rules say.
  std::int64_t predicted_peak_activation_bytes = 0;
  std::int64_t measured_peak_activation_bytes = 0;
  // The processes each sequence is split over (the model's context parallelism).
  int context_parallel = 1;

  [[nodiscard]] bool ok() const { return skipped.empty(); }
  [[nodiscard]] double predicted_step_us() const { return diff.predicted_step_us; }
  [[nodiscard]] double step_error_pct() const { return noise.error_pct(diff.predicted_step_us); }
  [[nodiscard]] double outside_band_points() const { return noise.outside_points(diff.predicted_step_us); }
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
  plan::RequestGrid grid;
  int steps = 2;   // per run, at least 2: the first step runs cold and is not measured
  int rounds = 1;  // runs of the whole grid, one after the other
  std::uint64_t seed = 1;
  exec::OptimizerConfig optimizer;
  double watchdog_seconds = 60.0;
  // Where each configuration trains: exec::cpu::train (CPU threads) when empty;
  // gpipe-run sets the CUDA trainer for --backend cuda.
  std::function<exec::TrainResult(const exec::TrainOptions&)> train;
  // When set, each row predicts with profile_for(K) instead of the profile
  // given: the CUDA backend measures one per SM partition size, since a stage
  // of a K-stage run has 1/K of the GPU.
  std::function<const profiles::Profile&(int stages)> profile_for;
  // When set (and profile_for is not), the profile is measured again before
  // each round after the first, and the rows predict from the median of
  // every round's (profiles/median_profile.hpp), with the partition the
  // first profile balanced: a noisy minute while profiling then weighs as
  // little as one in the grid's runs. Called with the round (1-based).
  std::function<profiles::Profile(int round)> measure_profile;
  // Called with that median once the last round's profile is in.
  std::function<void(const profiles::Profile&)> on_median_profile;
  // cpu: the threads each rank computes with, in every row (TrainOptions::threads_per_rank).
  int threads_per_rank = 1;
  // With data parallelism (the grid's base.data_parallel), how many replicas
  // share the machine (sim::Conditions): all of them for CPU processes on one node.
  int replicas_sharing_machine = 1;
  // Called with each row as soon as it is done: in the last round, in grid order.
  std::function<void(const CalibrationRow&)> on_row;
  // Called before each training: the round (0-based), the configuration's
  // index among those run in a round, and how many are run in a round.
  std::function<void(int round, int index, int count)> on_run;
};

// Rows in grid order: schedule, recompute, K, M (M fastest). InputError for a
// bad grid (empty lists, steps < 2, rounds < 1) or a profile of another model; RunError
// from a run that fails (a worker fault, a stall).
[[nodiscard]] std::vector<CalibrationRow> run_calibration(const profiles::Profile& profile,
                                                        const CalibrationOptions& options);

// The CSV plots/validation.py reads, one row per configuration:
//   schedule,recompute,stages,microbatches,micro_batch_size,batch,partition,
//   status,reason,predicted_step_us,measured_step_us,step_time_error_pct,
//   predicted_bubble,measured_bubble,bubble_fraction_analytic,bubble_error_points,
//   predicted_peak_activation_bytes,measured_peak_activation_bytes,peak_activation_equal,
//   transfers,predicted_transfer_us,measured_transfer_us,transfer_error_pct,
//   transfer_median_abs_error_pct,step_samples,measured_step_q1_us,measured_step_q3_us,
//   noise_band_pct,outside_band_points,data_parallel,reductions,predicted_reduction_us,
//   measured_reduction_us,reduction_error_pct,tensor_parallel,tp_collective_actions,
//   predicted_tp_collective_us,measured_tp_collective_us,tp_collective_error_pct,zero,
//   context_parallel,cp_collective_actions,predicted_cp_collective_us,
//   measured_cp_collective_us,cp_collective_error_pct
// (transfers..transfer_median_abs_error_pct: the link model alone, sim/diff.hpp
// TransferError; reductions..reduction_error_pct: each stage's data-parallel
// reduction, the collectives' model alone, sim/diff.hpp TimelineDiff::reductions;
// tp_collective_actions..tp_collective_error_pct: each compute action's
// tensor-parallel all-reduces summed, TimelineDiff::tensor_parallel; zero:
// ZeRO's stage over the replicas; context_parallel: C; cp_collective_actions..
// cp_collective_error_pct: each compute action's context-parallel all-gathers
// and reduce-scatters summed, TimelineDiff::context_parallel;
// measured_step_us is the median over step_samples warm steps)
// (a skipped row leaves the metric cells empty; the error is (pred - meas) / meas).
[[nodiscard]] std::string calibration_csv(const std::vector<CalibrationRow>& rows);
[[nodiscard]] nlohmann::json calibration_json(const std::vector<CalibrationRow>& rows);

}  // namespace gpipe::calibration
