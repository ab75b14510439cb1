// The lanes of a Timeline's actions in a Chrome trace, and their thread ids.
// Lane 0 is the compute stream, whose actions never overlap. A rank's
// transfers can overlap in time when they travel different links
// (activations forward while gradients go back), and Perfetto drops a slice
// that overlaps another on its thread, so each comm stream is split into
// lanes: sends on lanes 1, 3, 5, ... and receives on lanes 2, 4, 6, ..., a
// transfer taking the first lane free at its start. The backward of an
// overlapped pair that ran beside its forward (Stream::overlap) goes on lane
// kOverlapTid, "overlap"; a stage's gradient reduction over its data-parallel
// group (Stream::reduce) on kReduceTid, "reduce" (one at a time per rank).
// A rank's tensor-parallel collectives (Timeline::collectives), which run
// inside its compute actions, on kTensorParallelTid, "tensor-parallel" (and
// the ones above it, "tensor-parallel 2", ..., where an overlapped pair's
// collectives meet); its context-parallel collectives on kContextParallelTid,
// "context-parallel" (and up, the same way).
//
// A lane's tid is lane + 1 (trace version 2): Perfetto's JSON importer reads
// tid 0 as "no tid" and puts the event on the process's main thread, which
// merged rank r's compute into its lane r (see timelines/trace_lint.hpp).
// Version 1 traces, written with tid = lane, are still read.
#pragma once

#include <string>
#include <vector>

#include "timelines/timeline.hpp"

namespace gpipe::timelines {

// Far above any comm lane a rank could need.
inline constexpr int kOverlapTid = 1'000'000;
inline constexpr int kReduceTid = 1'000'001;
inline constexpr int kTensorParallelTid = 1'000'002;  // and up
inline constexpr int kContextParallelTid = 1'100'000;  // and up

// One lane per collective span of the timeline, in the same order.
[[nodiscard]] std::vector<int> assign_collective_lanes(const Timeline& timeline);

// One lane per action of the timeline, in the same order.
[[nodiscard]] std::vector<int> assign_lanes(const Timeline& timeline);

[[nodiscard]] Stream stream_of_lane(int lane);

// "compute", "send", "recv", then "send 2", "recv 2", ... for the extra lanes,
// "overlap", "reduce", "tensor-parallel", "tensor-parallel 2", ..., "context-parallel", ...
[[nodiscard]] std::string lane_name(int lane);

// The thread id a lane is written with, and back (by the trace's version).
[[nodiscard]] constexpr int tid_of_lane(int lane) { return lane + 1; }
[[nodiscard]] constexpr int lane_of_tid(int tid, int trace_version) { return trace_version >= 2 ? tid - 1 : tid; }

}  // namespace gpipe::timelines
