// `gpipe-sim sweep --workload inference`: the grid K x B x b of one stream
// (sim/inference/sweep.hpp), the best throughput per K within --latency-limit
// (p99) and the memory limit, and every row to CSV (--out) for
// plots/inference_tradeoff.py.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/gpipe-sim/inference_flags.hpp"
#include "tools/gpipe-sim/scenario_flags.hpp"

namespace gpipe::tools {

// The lists only an inference sweep has.
struct InferenceGridFlags {
  std::string in_flight;          // B list; empty: each K's own
  std::string micro_batch_sizes = "1";
  std::string latency_limit;      // a time (tools/common/units.hpp); empty: none

  void add_to(CLI::App& cmd);
};

// What the sweep command shares with its training sweep.
struct SweepCommon {
  const FixedFlags& fixed;
  const std::string& partition;
  const std::string& memory_limit;
  const std::string& out;
};

int run_inference_sweep(const InferenceFlags& flags, const InferenceGridFlags& grid, const SweepCommon& common,
                        const CLI::App& cmd);

}  // namespace gpipe::tools
