// The Chrome-trace JSON form of a Timeline (docs/design.md, "Timeline and Chrome
// trace"): it opens in Perfetto and chrome://tracing, and reads back into the
// identical Timeline, so `gpipe-sim diff` can compare a prediction with a
// measurement op by op.
//
//   {"traceEvents": [...], "displayTimeUnit": "ns",
//    "otherData": {"gpipe": {"format": "gpipe-trace", "version": 1, "schedule": {...},
//                            "source": {"kind", "device"}, "batch_size", "static_bytes",
//                            "metrics": {...}}}}
//
// Events: "M" names each rank ("rank 0 (stages 0, 4)") and stream; one "X" per
// action (name = action text, cat compute|comm, pid = rank, tid = stream, ts/dur
// in us, args {stage, microbatch, kind}); "s"/"f" flows from each send to its
// receive; "C" counters "activation memory" with args {bytes}.
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "timelines/timeline.hpp"

namespace gpipe::timelines {

[[nodiscard]] nlohmann::json to_chrome_trace(const Timeline& timeline);

// Writes one event per line; throws InputError naming the file if it cannot write.
void write_chrome_trace(const Timeline& timeline, const std::filesystem::path& path);
// The same for a trace already made (to_chrome_trace, with events added to it).
void write_chrome_trace(const nlohmann::json& trace, const std::filesystem::path& path);

// Reads X events of cat compute/comm (in file order) into actions, C events
// "activation memory" into memory samples, otherData.gpipe into info; other
// events (M, flows, Kineto "kernel" events) are ignored. Times come back as
// llround(ts * 1000) and start + llround(dur * 1000), which inverts the
// writer exactly. Throws InputError naming `origin` and the field or event
// index at fault, including when two actions of one (rank, stream) overlap.
[[nodiscard]] Timeline timeline_from_chrome_trace(const nlohmann::json& trace,
                                                  std::string_view origin);
[[nodiscard]] Timeline read_chrome_trace(const std::filesystem::path& path);

}  // namespace gpipe::timelines
