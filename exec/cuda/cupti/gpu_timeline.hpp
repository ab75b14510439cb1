// From GPU activity records to the measured Timeline's actions: every IR action
// runs under its own external correlation id, so its kernels and copies are
// found through CUPTI's correlation records, and the action's GPU interval is
// [earliest start, latest end) of that work. Nothing is dropped silently: work
// that no action claims, actions with no GPU work, and CUPTI's dropped records
// are all counted in the result.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "exec/cuda/cupti/activity_record.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec::cuda::cupti {

// The IR action an external id was pushed for, and the rank that ran it.
struct ActionRef {
  schedules::Rank rank;
  schedules::Action action;

  bool operator==(const ActionRef&) const = default;
};

using ExternalIdMap = std::map<std::uint64_t, ActionRef>;

struct GpuTimeline {
  // One per action with GPU work, on the stream its kind runs on
  // (timelines::stream_of), sorted by (rank, start, stream).
  std::vector<timelines::TimedAction> actions;
  // External ids of the map whose action launched no kernel or copy.
  std::vector<std::uint64_t> actions_without_gpu_work;
  // Kernels and copies whose correlation id no external id claims (launched
  // outside any action, or their correlation record was lost).
  std::uint64_t unmatched_records = 0;
  // Kernels and copies claimed by an external id the map does not know.
  std::uint64_t unknown_external_records = 0;
  // Records CUPTI dropped (copied from ActivityRecords::dropped).
  std::uint64_t dropped_records = 0;

  bool operator==(const GpuTimeline&) const = default;
};

// Correlation id -> external id, from the external correlation records; when
// one correlation id is claimed twice, the first record wins.
[[nodiscard]] std::map<std::uint32_t, std::uint64_t> correlation_to_external(
    const ActivityRecords& records);

// Times are CUPTI's minus `origin_ns` (pass the trace's origin to line the GPU
// actions up with host events; 0 keeps CUPTI's clock).
[[nodiscard]] GpuTimeline build_gpu_timeline(const ActivityRecords& records,
                                             const ExternalIdMap& actions,
                                             std::int64_t origin_ns = 0);

}  // namespace gpipe::exec::cuda::cupti
