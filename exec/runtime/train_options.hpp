// What a training run is asked (TrainOptions) and what it gives back
// (TrainResult), the same for every backend: a model trained through a
// pipeline schedule, every action's start and end measured into a Timeline
// scored by the same metrics as the simulator's prediction.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "exec/runtime/fault.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "models/checkpointing.hpp"
#include "models/model.hpp"
#include "models/partition.hpp"
#include "schedules/schedule.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

struct TrainOptions {
  // The model as each process's layers compute it. Context parallelism is
  // the model's: one split by models::split_context_parallel runs each
  // sequence over model.context_parallel processes (the CPU over MPI, the
  // llama family), each holding S / C of its tokens.
  models::Model model;
  // Compute actions only, or already lowered; lowered here when it is not.
  // Validated before any thread starts.
  schedules::Schedule schedule;
  models::Partition partition;  // one entry per stage of the schedule
  // With the schedule's recompute full: each stage's checkpoints
  // (models/checkpointing.hpp, plan::Plan::checkpointing).
  std::optional<models::Checkpointing> checkpointing;
  std::int64_t batch = 0;       // N samples per mini-batch, split into M as torch.tensor_split
  // Tensor parallelism: each rank's blocks split over this many processes
  // (models::split_tensor_parallel; the CPU over MPI, exec/mpi/).
  int tensor_parallel = 1;
  // ZeRO's stage over the schedule's data-parallel replicas: 0, or 1 (each
  // replica keeps and updates the optimizer state of its share of every
  // stage's values: exec/runtime/zero_shards.hpp).
  int zero = 0;
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
  // cpu: the threads each rank computes with (its own and helpers that share
  // its GEMMs and elementwise passes: exec/cpu/compute_team.hpp). Other
  // backends take 1 only.
  int threads_per_rank = 1;
  // Called after every step with its index and loss (progress on a terminal).
  std::function<void(int step, double loss)> on_step;

  // The pipeline's replicas D. The schedule's data_parallel is the gradient
  // group, as the planner's (plan/plan.cpp): D x C with context parallelism,
  // each stage's gradients summed over the replicas and the context members.
  [[nodiscard]] int replicas() const { return schedule.data_parallel / model.context_parallel; }
};

struct TrainResult {
  // Whether this process has the whole run: always with every rank in one
  // process; with one rank per process, only in the process of the loss
  // stage, which alone has the losses, the timeline and the metrics.
  bool reporter = true;
  std::vector<double> losses;  // one per step: the mean per-sample loss over the mini-batch
  // Of the last measured_steps steps, the one of median step time (the lower
  // median for an even count); source the backend's name, device its hardware.
  timelines::Timeline timeline;
  int timeline_step = 0;       // which step (0-based) that is
  // Every measured step's makespan in ns, in step order: its spread is the
  // run's noise (calibration/step_noise.hpp).
  std::vector<std::int64_t> step_times_ns;
  timelines::Metrics metrics;  // compute_metrics(timeline)
  // The weights after the last step: [layer][parameter] values, in model
  // order, of the stages this process holds.
  std::vector<std::vector<std::vector<float>>> weights;
};

}  // namespace gpipe::exec
