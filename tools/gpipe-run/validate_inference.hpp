// `gpipe-run validate --workload inference`: the inference grid's flags and
// its run (calibration/serving_calibration.hpp): a table of predicted
// against measured throughput, median and p99 latency and peak memory per
// configuration, the noise-aware summary, CSV (--out) and JSON (--json).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "exec/inference/cpu_serving.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::tools {

struct InferenceValidateFlags {
  std::string workload = "training";
  std::string in_flight;  // list; empty: each K
  std::string micro_batch_sizes;
  int requests = 64;
  std::optional<double> arrival_interval_us;
  std::optional<double> arrival_rate;
  std::uint64_t arrival_seed = 1;

  void add_to(CLI::App& cmd);
  [[nodiscard]] bool inference() const { return workload == "inference"; }
  // InputError naming the flag: inference's flags with training, training's with inference.
  void check_flags(const CLI::App& cmd) const;
};

// What the validate command hands over: the model and its flags, and how it
// measures a profile at given sizes (round 0: the first; later: again).
struct InferenceValidation {
  models::Model model;
  std::string stages;  // the --stages list
  std::string partition;
  std::uint64_t seed = 1;
  int rounds = 3;
  int threads_per_rank = 1;
  std::string out;
  bool json = false;
  std::function<profiles::Profile(const std::vector<int>& sizes, int round)> profile;
  bool remeasure = false;  // measure the profile again before each round after the first
  // Serves a configuration (--launcher: as processes); empty: on threads here.
  std::function<exec::inference::ServingResult(const exec::inference::ServingRequest&)> serve;
};

int run_validate_inference(const InferenceValidateFlags& flags, const InferenceValidation& v);

}  // namespace gpipe::tools
