// A lint of the Chrome traces both tools write, by the rules Perfetto's JSON
// importer applies (read in its source, google/perfetto
// src/trace_processor/importers/...; each rule below names where). A trace
// that breaks one opens, but a viewer silently drops or misplaces part of it:
// an arrow, a slice, a whole lane.
//
//   threads  X, s and f events have an integer pid >= 0 and tid >= 1: the
//            JSON tokenizer reads tid 0 as "no tid" and moves the event to the
//            thread tid == pid (json_trace_tokenizer.cc, "Make the tid equal
//            to the pid if tid is not set"), merging lanes.
//   slices   X events have finite ts >= 0 and dur >= 0, and on one (pid, tid)
//            are nested or disjoint: a complete event that partially overlaps
//            another is dropped (slice_tracker.cc,
//            slice_drop_overlapping_complete_event).
//   flows    each (id, cat, name) has one s and one f; the f is bound to its
//            enclosing slice ("bp": "e") and is not earlier than its s, since
//            events are processed in time order and an f before its s is
//            dropped (flow_tracker.cc, flow_end_without_start); each binds to
//            the topmost slice on its thread's stack (GetTopmostSliceOnTrack),
//            so it must lie inside (start <= ts <= end) the slice on its
//            thread that started last before it.
//   counters C events' args are finite JSON numbers (json_trace_parser.cc:
//            anything else is a json_parser_failure and the value is lost).
//   names    process_name and thread_name metadata are non-empty strings, at
//            most one per process and per thread (the last one wins).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gpipe::timelines {

// Every violation, one line each: "traceEvents[12]: flow 3 ends at 1.5 us,
// before it starts at 2.0 us"; empty when the trace follows the rules.
[[nodiscard]] std::vector<std::string> lint_chrome_trace(const nlohmann::json& trace);

}  // namespace gpipe::timelines
