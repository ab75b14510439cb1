// Calibration of serving runs (`gpipe-run validate --workload
// inference`): for each configuration of a grid (K stages x B in flight x b
// samples per item), predict the stream from a profile (sim/inference/) and
// serve it for real on CPU threads (exec/inference/), or as processes under a
// launcher, with the SAME partition,
// and compare throughput, latency (item by item too) and peak memory. As in
// training's calibration (calibration.hpp) the grid runs in rounds,
// interleaved, and the profile is measured again before each round where a
// measure is given, every row predicted from the median profile. A row's
// measured throughput and median latency are the medians over its rounds, and
// their interquartile ranges its noise bands (step_noise.hpp); the round of
// median throughput is the one diffed item by item.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/step_noise.hpp"
#include "exec/inference/cpu_serving.hpp"
#include "models/model.hpp"
#include "models/partition.hpp"
#include "profiles/profile.hpp"
#include "schedules/serving_workload.hpp"
#include "timelines/serving_metrics.hpp"

namespace gpipe::calibration {

struct ServingCalibrationRow {
  int stages = 0;
  int in_flight = 0;
  int micro_batch_size = 0;
  std::string skipped;  // why the configuration cannot exist; empty when run
  std::vector<int> partition;
  timelines::ServingMetrics predicted;
  timelines::ServingMetrics measured;  // the round of median throughput
  StepNoise throughput;     // items/s over the rounds (the "us" fields hold items/s)
  StepNoise latency_p50;    // us over the rounds
  // Over the items of the diffed round: the mean of |predicted - measured| /
  // measured latency, in percent.
  double item_latency_mean_abs_error_pct = 0;
  std::int64_t predicted_peak_activation_bytes = 0;  // the largest over ranks
  std::int64_t measured_peak_activation_bytes = 0;
  bool peaks_equal = false;  // every rank's peak, predicted and measured

  [[nodiscard]] bool ok() const { return skipped.empty(); }
  [[nodiscard]] double throughput_error_pct() const {
    return throughput.error_pct(predicted.throughput_items_per_s);
  }
  [[nodiscard]] double latency_error_pct() const { return latency_p50.error_pct(predicted.latency.p50_us); }
  [[nodiscard]] bool peak_activation_equal() const { return peaks_equal; }
};

struct ServingCalibrationOptions {
  models::Model model;
  std::vector<int> stages;
  std::vector<int> in_flight;  // empty: each K
  std::vector<int> micro_batch_sizes;
  schedules::Workload workload;  // R and the arrivals; B is the row's
  models::PartitionSpec partition;
  int rounds = 3;
  std::uint64_t seed = 1;
  int threads_per_rank = 1;
  // When set, the profile is measured again before each round after the
  // first (called with the round, 1-based), and the rows predict from the
  // median of every round's, with the partition the first profile balanced.
  std::function<profiles::Profile(int round)> measure_profile;
  // How a configuration is served: when empty, on threads of this process
  // (run_cpu_serving); validate's --launcher serves it as processes.
  std::function<exec::inference::ServingResult(const exec::inference::ServingRequest&)> serve;
  std::function<void(const ServingCalibrationRow&)> on_row;           // each row, when done
  std::function<void(int round, int index, int count)> on_run;       // before each run
};

// Rows K outermost, then B, then b. InputError for an empty list, rounds < 1
// or a profile of another model.
[[nodiscard]] std::vector<ServingCalibrationRow> run_serving_calibration(const profiles::Profile& profile,
                                                                       const ServingCalibrationOptions& options);

// One CSV row per configuration:
//   stages,in_flight,micro_batch_size,requests,partition,status,reason,
//   predicted_throughput_items_per_s,measured_throughput_items_per_s,throughput_error_pct,
//   throughput_band_pct,throughput_outside_band_points,predicted_latency_p50_us,
//   measured_latency_p50_us,latency_error_pct,latency_band_pct,latency_outside_band_points,
//   predicted_latency_p99_us,measured_latency_p99_us,item_latency_mean_abs_error_pct,
//   predicted_peak_activation_bytes,measured_peak_activation_bytes,peak_activation_equal
[[nodiscard]] std::string serving_calibration_csv(const std::vector<ServingCalibrationRow>& rows);
[[nodiscard]] nlohmann::json serving_calibration_json(const std::vector<ServingCalibrationRow>& rows);

}  // namespace gpipe::calibration
