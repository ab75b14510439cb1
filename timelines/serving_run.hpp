// What a serving run did (docs/design.md, "Inference"): each item's
// arrival, admission and completion, each rank's busy time and memory peak,
// and, where recorded, the Timeline of its forwards and transfers. The
// simulator predicts one (sim/inference/replay.hpp) and the executor
// records one; both are scored by timelines/serving_metrics.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timelines/timeline.hpp"

namespace gpipe::timelines {

struct ItemTimes {
  std::int64_t arrival_ns = 0;
  std::int64_t admitted_ns = 0;
  std::int64_t completed_ns = 0;

  [[nodiscard]] std::int64_t latency_ns() const { return completed_ns - arrival_ns; }
  bool operator==(const ItemTimes&) const = default;
};

struct ServingRun {
  std::vector<ItemTimes> items;                // in item order
  std::vector<std::int64_t> busy_ns;           // per rank: its forwards
  std::vector<std::int64_t> peak_bytes;        // per rank: activation bytes, state included
  std::vector<std::int64_t> state_bytes;       // per rank: what the sequences' state holds throughout
  // With record: F, SEND_F and RECV_F of every item (micro-batch = item) and
  // every memory change; info as the caller fills it.
  timelines::Timeline timeline;
};

// A serving run's TimelineInfo: schedule "inference", K stages one per rank, R
// items as its micro-batches, R x b samples, the weights per rank.
[[nodiscard]] TimelineInfo serving_info(int num_stages, int requests, int micro_batch_size, std::string source,
                                       std::string device, std::vector<std::int64_t> static_bytes);

// One change of a rank's activation bytes in a serving run.
struct MemoryChange {
  std::int64_t time_ns = 0;
  std::int64_t delta = 0;
};

// The peak of a rank's bytes from `base` through `changes` (sorted here by
// time, frees before allocations at one instant), appending every sample to
// `samples` when it is not null (the first at time 0, `base`).
[[nodiscard]] std::int64_t peak_of(schedules::Rank rank, std::int64_t base, std::vector<MemoryChange>& changes,
                                   std::vector<MemorySample>* samples);

}  // namespace gpipe::timelines
