// Comparing a predicted Timeline with a measured one (`gpipe-sim diff`): the
// step time, bubble and peak activation memory of each (timelines::compute_metrics),
// and every action matched by (rank, action text), to say how far the simulator
// is from reality and where. Signed errors are predicted minus measured, so a
// negative error means the simulator is optimistic.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedules/action.hpp"
#include "sim/wait_attribution.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

// Durations of one compute kind over the matched actions. mean_error_pct is
// the error of the mean duration, (pred - meas) / meas * 100: a ratio of sums,
// so a measured action of 0 us (a STEP without optimizer) cannot blow it up.
struct KindError {
  schedules::ActionKind kind = schedules::ActionKind::F;
  int count = 0;
  double predicted_mean_us = 0.0;
  double measured_mean_us = 0.0;
  double mean_abs_error_us = 0.0;
  double mean_error_pct = 0.0;
};

// One matched action. error_us = predicted - measured duration; start_drift_us
// = predicted start - measured start, each relative to its own trace's earliest
// start (a measured trace does not start at 0).
struct ActionError {
  schedules::Rank rank;
  schedules::Action action;
  double predicted_us = 0.0;
  double measured_us = 0.0;
  double error_us = 0.0;
  double start_drift_us = 0.0;
};

// The link model alone, over the messages of both traces: a message's
// predicted transfer is its RECV's interval in a prediction (latency + bytes /
// bandwidth, after any wait for the link); the measured one runs from the
// later of its SEND's and its RECV's start to the RECV's end, the time the
// bytes took once both sides were there. (A message that arrived before its
// RECV began counts only the RECV's own time: an under-estimate of the link.)
struct TransferError {
  int count = 0;
  double predicted_mean_us = 0.0;
  double measured_mean_us = 0.0;
  double mean_error_pct = 0.0;        // of the means
  double median_abs_error_pct = 0.0;  // over messages
  double max_abs_error_pct = 0.0;
  std::vector<double> abs_errors_pct;  // every message's |error|, ascending (to pool over traces)
};

// Every percentage is (pred - meas) / meas * 100: 0 when both are 0, and NaN
// (null in JSON, "n/a" in text) when only the measured value is 0.
struct TimelineDiff {
  timelines::TimelineInfo predicted_info, measured_info;  // for the report's header
  int matched = 0;
  std::vector<std::string> only_in_predicted, only_in_measured;  // "3B7 (rank 3)", sorted
  double predicted_step_us = 0.0, measured_step_us = 0.0, step_time_error_pct = 0.0;
  double predicted_bubble = 0.0, measured_bubble = 0.0;  // fractions in [0, 1]
  double bubble_error_points = 0.0;                      // (pred - meas) * 100
  std::vector<KindError> kinds;  // compute kinds present among matched actions, in enum order
  double mean_abs_start_drift_us = 0.0, max_abs_start_drift_us = 0.0;  // over matched actions
  std::vector<double> peak_activation_error_pct;                       // per rank
  TransferError transfers;  // count 0 when the schedule has no messages
  // Each data-parallel reduction (REDUCE_GRAD on a rank's reduce stream):
  // its duration, start to end; count 0 without data parallelism.
  TransferError reductions;
  // Each compute action's tensor-parallel collectives (Timeline::collectives),
  // their durations summed, matched by (rank, action); count 0 without. The
  // same of its context-parallel ones.
  TransferError tensor_parallel;
  TransferError context_parallel;
  // Where each rank idled and what held it (sim/wait_attribution.hpp), by rank.
  std::vector<RankWaits> predicted_waits, measured_waits;
  std::vector<ActionError> worst;  // largest |error_us| first; ties by (rank, action)
};

// Matches every action, compute and comm, by (rank, action), and apart from
// them each data-parallel reduction on a reduce stream and each action's
// tensor- and context-parallel collectives. Throws InputError
// when the two traces describe different schedules (naming each field that
// differs: name, num_ranks, num_stages, num_microbatches, recompute,
// stage_to_rank), when an action appears twice on one rank of a trace, when no
// action matches, or when worst < 0.
[[nodiscard]] TimelineDiff diff_timelines(const timelines::Timeline& predicted,
                                          const timelines::Timeline& measured, int worst = 10);

[[nodiscard]] nlohmann::json to_json(const TimelineDiff& diff);
// The readable report of `gpipe-sim diff`: header, step time, bubble, per-kind
// table, start drift, peak memory per rank, unmatched and worst actions.
[[nodiscard]] std::string to_text(const TimelineDiff& diff);

}  // namespace gpipe::sim
