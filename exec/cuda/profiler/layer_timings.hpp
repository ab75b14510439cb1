// The pure half of the CUDA profiler: from the activity records of the timed
// passes to each layer's median forward, backward and optimizer-step time.
// Every call the profiler makes (one layer's forward, backward or step, at one
// micro-batch size, in one timed pass) runs under its own external id; the
// call's GPU time is [earliest start, latest end) of the kernels and copies
// CUPTI correlates with that id, and a layer's figure is the median over the
// passes. No CUPTI and no GPU here, so it is tested in CI on hand-made records.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "exec/cuda/cupti/activity_record.hpp"
#include "profiles/profile.hpp"

namespace gpipe::exec::cuda::profiler {

enum class Phase : std::uint8_t { forward, backward, step };

[[nodiscard]] const char* to_string(Phase phase);  // "forward", "backward", "step"

// What an external id was pushed for.
struct CallRef {
  int layer = 0;
  int micro_batch_size = 0;
  Phase phase = Phase::forward;
  int repeat = 0;  // the timed pass

  bool operator==(const CallRef&) const = default;
};

using CallMap = std::map<std::uint64_t, CallRef>;

// One (layer, micro-batch size, phase): the size is 0 for a step, which does
// not depend on it.
struct TimingKey {
  int layer = 0;
  int micro_batch_size = 0;
  Phase phase = Phase::forward;

  auto operator<=>(const TimingKey&) const = default;
};

// The GPU time of each id of `ids` that launched work: latest end - earliest
// start of the kernels and copies (memsets included) CUPTI correlates with it,
// in ns. Ids without GPU work are absent.
[[nodiscard]] std::map<std::uint64_t, std::int64_t> gpu_durations(
    const cupti::ActivityRecords& records, const std::vector<std::uint64_t>& ids);

struct LayerTimings {
  // The median over the repeats, in ns (a half ns where the count is even).
  std::map<TimingKey, double> median_ns;
  // Forward and backward calls that launched nothing: the records are
  // incomplete (every forward and backward launches kernels).
  std::vector<std::uint64_t> missing_calls;
  // Steps that launched nothing (a layer whose optimizer has nothing to
  // update); they count as 0 ns.
  std::vector<std::uint64_t> empty_steps;
  // Kernels and copies under no id of `calls` (the input copies between
  // passes, for one), and records CUPTI dropped.
  std::uint64_t unclaimed_records = 0;
  std::uint64_t dropped_records = 0;

  bool operator==(const LayerTimings&) const = default;
};

[[nodiscard]] LayerTimings layer_timings(const cupti::ActivityRecords& records, const CallMap& calls);

// Throws RunError unless every forward and backward got its GPU work and
// CUPTI dropped nothing: a profile from partial records would be too fast.
void require_complete(const LayerTimings& timings, const CallMap& calls);

// Sets fwd_us and bwd_us of every sample of layers[i] (layer index i) and
// each layer's optimizer_us (0 where no step was timed: no parameters) from
// the medians. Throws RunError for a sample whose forward or backward has no
// median (call require_complete first).
void apply_timings(const LayerTimings& timings, std::vector<profiles::LayerProfile>& layers);

}  // namespace gpipe::exec::cuda::profiler
