// gpipe-sim's own flags: those that describe one configuration (`run`): the
// pipeline's (tools/common/pipeline_flags.hpp: schedule or its file, K, M,
// batch, recompute, partition), the link (and its sharing), overlapped pairs,
// optimizer and jitter; and those a sweep holds fixed across its grid (the
// grid itself is tools/common/grid_flags.hpp, shared with gpipe-run validate).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "plan/plan.hpp"
#include "profiles/profile.hpp"
#include "profiles/shipped.hpp"
#include "schedules/schedule.hpp"
#include "sim/scenario.hpp"
#include "tools/common/pipeline_flags.hpp"
#include "tools/gpipe-sim/cluster_flags.hpp"

namespace gpipe::tools {

// The flags `run` and `sweep` share: the profile, and what a sweep holds fixed
// across its grid (backward order, optimizer, the link, how overlapped pairs
// run, a schedule file instead of generated schedules).
struct FixedFlags {
  std::string profile{profiles::kDefaultProfile};
  std::string backward_order = "reverse";
  std::optional<double> link_latency_us;
  std::optional<double> link_bandwidth_GBps;
  std::string link_sharing = "fifo";
  std::string optimizer = "adamw";
  std::optional<double> overlap_f_b;  // share of the compute stream each of a pair runs at
  std::string action_overhead_us;     // "F=120,B=200" (sim/action_overhead.hpp); empty: none
  std::string runtime_overhead;       // a runtime's cost file (sim/runtime_overhead.hpp); empty: none
  ClusterFlags cluster;               // TP (the profile's), DP, ZeRO, nodes

  // --schedule-file is stored in `schedule_file` (an IR JSON or torch CSV
  // file, tools/common/schedule_file.hpp; empty: generate).
  void add_to(CLI::App& cmd, std::string& schedule_file);
  // Sets those fields of the request and the conditions; throws InputError
  // for a value that is not one.
  void apply_to(plan::PlanRequest& request, sim::Conditions& conditions) const;
};

// gpipe-sim's note on what a schedule holds that no profile prices, nor an
// overhead of the conditions ("note: 4 UNSHARD/RESHARD/REDUCE_GRAD/WAIT_REDUCE_GRAD
// actions cost 0 (...)"), or empty.
[[nodiscard]] std::string unpriced_note(const schedules::Schedule& schedule, const sim::Conditions& conditions);

// "runtime     torch.distributed.pipelining 2.15.0 (gloo) on CPU (vm): ... (FILE)\n", or
// empty without --runtime-overhead.
[[nodiscard]] std::string runtime_overhead_line(const FixedFlags& flags);

// The memory limit per rank that --memory-limit (`flag`) and the profile
// give, and what it is, for the report ("81.24 GB: NVIDIA H100 80GB HBM3's 85.52 GB
// less 5 %"), or nullopt for none. InputError for "device" with a profile
// that knows no device memory, or bytes that do not parse.
struct MemoryLimit {
  std::int64_t bytes = 0;
  std::string origin;  // "--memory-limit" or the device's description
};
[[nodiscard]] std::optional<MemoryLimit> memory_limit_of(const std::string& flag,
                                                         const profiles::Profile& profile);

struct ScenarioFlags {
  FixedFlags fixed;
  PipelineFlags pipeline;  // the schedule (or its file), K, V, M, N or b, recompute
  std::string partition = "balanced";
  // Bytes, or "device" (the profile's device memory less its reserve); empty:
  // "device" where the profile knows its device's memory, else none.
  // zb-auto searches within it; every schedule is checked against it.
  std::string memory_limit;
  double jitter_cv = 0.0;  // stochastic mode (sim/stochastic.hpp) when > 0
  int runs = 100;
  std::uint64_t seed = 1;

  void add_to(CLI::App& cmd);
  // Throws InputError for flags that do not make a configuration (`cmd` says
  // which were given).
  [[nodiscard]] sim::Scenario scenario(const CLI::App& cmd) const;
};

}  // namespace gpipe::tools
