// gpipe-sim run --model SPEC --device KEY: the analytic profile of a model
// made in memory, one GPU's of its tensor-parallel group, at the micro-batch
// sizes the run needs, so that a published configuration is one command
// (gpipe-sim profile then run --profile make the same profile in two).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "profiles/profile.hpp"
#include "sim/scenario.hpp"
#include "tools/gpipe-sim/cluster_flags.hpp"

namespace gpipe::tools {

struct ModelProfileFlags {
  std::string model;   // empty: the run reads --profile
  std::string device;  // a key of profiles/devices.json; empty: --cluster's
  std::string dtype = "bf16";
  std::string kernel_file;

  void add_to(CLI::App& cmd);
  [[nodiscard]] bool given() const { return !model.empty(); }
  // The profile for `scenario`: the model split over the scenario's
  // --tensor-parallel (and --sequence-parallel) on the device, at the
  // distinct sizes of its micro-batches. InputError for --profile beside
  // --model, a device that neither flag names, or a bad spec, dtype or file.
  [[nodiscard]] profiles::Profile make(const sim::Scenario& scenario, const ClusterFlags& cluster,
                                       const CLI::App& cmd) const;
  // "llama3-8b on h100 (analytic, made in memory)": the report's profile line.
  [[nodiscard]] std::string describe(const profiles::Profile& profile) const;
};

}  // namespace gpipe::tools
