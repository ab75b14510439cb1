// The Kineto-shaped GPU events of a measured trace (docs/design.md, "Timeline and
// Chrome trace"): one "X" event per kernel (cat "kernel") and per copy or set
// (cat "gpu_memcpy", "gpu_memset") with args.stream and args.correlation, as the PyTorch
// profiler writes them. schedules' writer does not emit these: the caller
// appends them to the trace's "traceEvents" (append_gpu_events), and the
// reader ignores them, so the trace still reads back into the same Timeline.
//
// pid is the rank of the action that launched the work (so kernels sit under
// their rank in Perfetto); work no action claims goes under pid
// kUnattributedPidBase + device. tid is kStreamTidBase + CUPTI's stream id,
// clear of the action streams' tids 0-2.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "exec/cuda/cupti/activity_record.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"

namespace gpipe::exec::cuda::cupti {

inline constexpr int kStreamTidBase = 1000;
inline constexpr int kUnattributedPidBase = 1000;

// The events (kernels, then copies, then "M" names of the GPU threads and of
// the unattributed processes). Times are CUPTI's minus origin_ns, in us.
[[nodiscard]] nlohmann::json gpu_trace_events(const ActivityRecords& records,
                                              const ExternalIdMap& actions,
                                              std::int64_t origin_ns = 0);

// Appends gpu_trace_events(...) to trace["traceEvents"] (a trace made by
// timelines::to_chrome_trace), and the record counts to
// otherData.gpipe.gpu_records {kernels, memcpys (copies and sets), unmatched,
// dropped}.
void append_gpu_events(nlohmann::json& trace, const ActivityRecords& records,
                       const ExternalIdMap& actions, std::int64_t origin_ns = 0);

}  // namespace gpipe::exec::cuda::cupti
