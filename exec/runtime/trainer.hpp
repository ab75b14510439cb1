// Training a model through a pipeline schedule on CPU threads: one worker per
// rank runs its lowered action list in order (exec/runtime/worker.hpp), stages hand
// activations and gradients over a transport (exec/runtime/transport.hpp), gradients
// accumulate over the micro-batches and each stage's STEP applies the
// optimizer once per mini-batch. Every action's start and end is measured and
// returned as a Timeline with source "cpu", scored by the same metrics as the
// simulator's prediction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/runtime/fault.hpp"
#include "exec/cpu/optimizer.hpp"
#include "models/model.hpp"
#include "models/partition.hpp"
#include "schedules/metrics.hpp"
#include "schedules/schedule.hpp"
#include "schedules/timeline.hpp"

namespace gpipe::exec {

struct TrainOptions {
  models::Model model;
  // Compute actions only, or already lowered; lowered here when it is not.
  // Validated before any thread starts.
  schedules::Schedule schedule;
  models::Partition partition;  // one entry per stage of the schedule
  std::int64_t batch = 0;       // N samples per mini-batch, split into M as torch.tensor_split
  int steps = 1;
  std::uint64_t seed = 0;  // weights and data
  OptimizerConfig optimizer;
  bool check_finite = false;  // a non-finite loss or gradient fails the run
  std::optional<FaultInjection> fault;
  // A run in which no action finishes for this long is stopped as stalled.
  double watchdog_seconds = 60.0;
  // How many of the last steps are measured into TrainResult::timeline (which
  // keeps the one of median step time): 1 keeps the last step; more makes a
  // measurement robust to a step that another process slowed down.
  int measured_steps = 1;
  // Called after every step with its index and loss (progress on a terminal).
  std::function<void(int step, double loss)> on_step;
};

struct TrainResult {
  std::vector<double> losses;     // one per step: the mean per-sample loss over the mini-batch
  // Of the last measured_steps steps, the one of median step time (the lower
  // median for an even count); source "cpu", device = the CPU's name.
  schedules::Timeline timeline;
  int timeline_step = 0;          // which step (0-based) that is
  schedules::Metrics metrics;     // compute_metrics(timeline)
  // The weights after the last step: [layer][parameter] values, in model order.
  std::vector<std::vector<std::vector<float>>> weights;
};

// Throws InputError for a configuration that cannot run (the partition does
// not match the schedule or the model, M > N, an invalid schedule, a fault on
// a rank or action that does not exist) before any thread starts, and
// RunError naming the rank and action when a worker fails or the run stalls;
// every worker thread has stopped when it returns or throws.
[[nodiscard]] TrainResult train(const TrainOptions& options);

// The name of this machine's CPU (/proc/cpuinfo "model name"), for the
// timeline's and the profile's device field; "cpu" when unknown.
[[nodiscard]] std::string cpu_device_name();

}  // namespace gpipe::exec
