// The Timeline: what a run of a schedule did, action by action, in integer
// nanoseconds. The simulator predicts one and the executor records one; both
// are written as the same Chrome trace (chrome_trace.hpp) and scored by the
// same metrics (metrics.hpp), so a prediction and a measurement can be diffed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/action.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::timelines {

// The stream of a rank an action ran on; for the first three, its value is the
// Chrome trace tid. `overlap` holds the backward of an overlapped pair that
// ran beside its forward (the simulator's --overlap-f-b), on a lane of its own
// (trace_lanes.hpp), so that no stream overlaps itself.
// reduce: a stage's gradient reduction over its data-parallel group
// (schedules/gradient_reduction.hpp), beside the compute stream.
enum class Stream : std::uint8_t { compute = 0, send = 1, recv = 2, overlap = 3, reduce = 4 };

// The streams every rank has (compute, send, recv); overlap and reduce only where used.
inline constexpr int kNumStreams = 3;

[[nodiscard]] std::string_view to_string(Stream stream);

// Where an action of this kind runs: sends on the send stream, receives on the
// recv stream, everything else (F, B, I, W, R, STEP) on the compute stream.
[[nodiscard]] constexpr Stream stream_of(schedules::ActionKind kind) {
  switch (kind) {
    case schedules::ActionKind::SEND_F:
    case schedules::ActionKind::SEND_B:
      return Stream::send;
    case schedules::ActionKind::RECV_F:
    case schedules::ActionKind::RECV_B:
      return Stream::recv;
    default:
      return Stream::compute;
  }
}

// One action as it ran: [start_ns, end_ns) on one stream of one rank.
struct TimedAction {
  schedules::Action action;
  schedules::Rank rank;
  Stream stream = Stream::compute;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  [[nodiscard]] std::int64_t duration_ns() const { return end_ns - start_ns; }
  bool operator==(const TimedAction&) const = default;
};

// The activation memory of a rank from time_ns on (until its next sample).
struct MemorySample {
  schedules::Rank rank;
  std::int64_t time_ns = 0;
  std::int64_t activation_bytes = 0;

  bool operator==(const MemorySample&) const = default;
};

// The group a collective inside a compute action ran over: the rank's
// tensor-parallel group (TimelineInfo::tensor_parallel GPUs) or its
// context-parallel group (TimelineInfo::context_parallel GPUs sharing each
// sequence's keys and values).
enum class CollectiveGroup : std::uint8_t { tensor, context };
// "tensor-parallel", "context-parallel": a trace's lane and a diff's line.
[[nodiscard]] std::string_view to_string(CollectiveGroup group);
// The group to_string names; nullopt for any other word.
[[nodiscard]] std::optional<CollectiveGroup> parse_collective_group(std::string_view text);

// A collective that ran inside a compute action (a split block's all-reduce
// of its partial outputs or input gradients; a context-parallel block's
// all-gather of the keys and values and reduce-scatter of their gradients):
// on the compute stream, as part of `within`'s interval, and shown on the
// rank's lane of its group in a trace (trace_lanes.hpp). A prediction prices
// it with the collectives' model; a run measures each call.
struct CollectiveSpan {
  schedules::Rank rank;
  schedules::Action within;           // the compute action (F, B, I, W or R) it ran in
  std::string collective;  // "all-reduce", "all-gather" or "reduce-scatter"
  std::int64_t bytes = 0;  // nccl-tests' size (profiles/collectives.hpp)
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  CollectiveGroup group = CollectiveGroup::tensor;

  [[nodiscard]] std::int64_t duration_ns() const { return end_ns - start_ns; }
  bool operator==(const CollectiveSpan&) const = default;
};

// What was run, and where: the schedule's shape, and who produced the timeline.
struct TimelineInfo {
  std::string schedule_name;
  int num_ranks = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  schedules::RecomputePolicy recompute = schedules::RecomputePolicy::never;
  std::vector<schedules::Rank> stage_to_rank;
  std::string source;           // "sim", "cpu", "cuda" or "torch" (a torch.distributed.pipelining run)
  std::string device;           // hardware name for measured timelines (may be empty for sim)
  std::int64_t batch_size = 0;  // samples per mini-batch N (for throughput); 0 = unknown
  std::vector<std::int64_t>
      static_bytes;  // per rank: params+grads+optimizer state; empty = unknown
  int tensor_parallel = 1;  // the GPUs (processes) each rank's stages are split over
  int context_parallel = 1;  // the GPUs (processes) each sequence is split over, beside those

  bool operator==(const TimelineInfo&) const = default;
};

struct Timeline {
  TimelineInfo info;
  std::vector<TimedAction> actions;
  std::vector<MemorySample> memory;
  std::vector<CollectiveSpan> collectives;  // with tensor or context parallelism; by rank, then start

  bool operator==(const Timeline&) const = default;
};

// Nanoseconds as the microseconds that traces, reports and JSON print.
[[nodiscard]] constexpr double to_us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// The sources a TimelineInfo may name.
[[nodiscard]] bool is_timeline_source(std::string_view source);

// The schedule's shape, with source "sim" and the rest unknown; the caller
// fills in device, batch_size and static_bytes where it knows them.
[[nodiscard]] TimelineInfo info_of(const schedules::Schedule& schedule);

// The actions of one rank (all streams), sorted by start, then stream.
[[nodiscard]] std::vector<TimedAction> actions_of(const Timeline& timeline, schedules::Rank rank);

// Latest end minus earliest start over all actions; 0 for an empty timeline.
// Measured timelines need not start at 0, so the earliest start is subtracted.
[[nodiscard]] std::int64_t makespan_ns(const Timeline& timeline);

// Throws InputError, naming `origin` and both actions, when two actions on the
// same rank's compute stream (or its overlap stream) overlap. Touching
// intervals ([a,b) then [b,c)) are fine. Transfers are not checked: on
// different links they may overlap.
void check_no_overlap(const Timeline& timeline, std::string_view origin);

}  // namespace gpipe::timelines
