// A pipeline runtime's own time as a cost model of its own: what torch's
// schedule runtime spends per action and per layer beyond the ops a
// one-process profile measures, and what its backend's point-to-point
// messages take. Measured once from that runtime's own pipeline traces
// (scripts/fit-torch-overhead fits it on two schedules of one model) and
// applied to a profile of any model: `gpipe-sim run --runtime-overhead FILE`.
// The file names the runtime, its version and backend, the device, and the
// traces it was fitted on (docs/torch.md, "torch's runtime as a cost").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/action_overhead.hpp"

namespace gpipe::sim {

inline constexpr std::string_view kRuntimeOverheadFormat = "gpipe runtime overhead";

struct RuntimeOverhead {
  std::string runtime;        // "torch.distributed.pipelining"
  std::string version;        // the runtime's, as the traces' maker recorded it ("2.15.0+cu132")
  std::string backend;        // "gloo"
  std::string device;         // what it ran on ("CPU (vm)")
  std::string measured_by;    // the command that fitted it
  std::vector<std::string> fitted_on;  // the traces
  ActionOverheads per_action;  // ns per action of the kind
  ActionOverheads per_layer;   // ns per layer of the action's stage
  double transfer_us = 0;      // a point-to-point message, post to completion: the link's latency
};

// Throws InputError naming the file and the field: not this format, a kind
// that is not one of the compute stream's, a value that is not a number of
// microseconds from 0 to 1e9, a missing field.
[[nodiscard]] RuntimeOverhead read_runtime_overhead(const std::filesystem::path& path);

// "torch.distributed.pipelining 2.15.0+cu132 (gloo) on CPU (vm): F=12 us, B=3 us an action; B=356 us a layer;
// transfers 212 us"
[[nodiscard]] std::string describe(const RuntimeOverhead& overhead);

}  // namespace gpipe::sim
