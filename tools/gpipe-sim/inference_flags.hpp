// The flags of `gpipe-sim run --workload inference` (and sweep's): the
// workload (schedules/serving_workload.hpp) beside the scenario flags that also
// mean something for inference (--stages, --micro-batch-size, --partition,
// the link, the jitter). Training's own flags are refused with inference, and
// inference's with training, each in one line naming the flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/inference/predict.hpp"
#include "tools/gpipe-sim/scenario_flags.hpp"

namespace gpipe::tools {

struct InferenceFlags {
  std::string workload = "training";
  int requests = 256;
  std::optional<int> in_flight;  // unsaid: K, the fewest that keep every stage busy
  std::optional<double> arrival_interval_us;
  std::optional<double> arrival_rate;
  std::uint64_t arrival_seed = 1;

  // `sweep` takes --in-flight as a list (its own flag), so it adds the rest.
  void add_to(CLI::App& cmd, bool with_in_flight = true);
  [[nodiscard]] bool inference() const { return workload == "inference"; }
  // InputError naming the flag: an inference flag with --workload training;
  // a training flag (schedule, M, N, recompute, ...) with inference.
  void check_flags(const CLI::App& cmd) const;
  // The workload, `in_flight_default` standing for an unsaid --in-flight.
  [[nodiscard]] schedules::Workload workload_of(int in_flight_default) const;
  // The inference scenario of the shared flags and these.
  [[nodiscard]] sim::inference::Scenario scenario(const ScenarioFlags& shared, const CLI::App& cmd) const;
};

}  // namespace gpipe::tools
