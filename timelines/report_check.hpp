// What every printed report promises (docs/design.md, "Simulation semantics"):
// 0 <= bubble <= 1, busy <= step time on every rank, bytes >= 0, every number
// finite. The commands check a Metrics before writing it anywhere (table, JSON,
// CSV, trace), so that an engine bug ends in an internal error that says what
// broke, never in a printed wrong number such as a bubble of -1343 %.
#pragma once

#include <string>
#include <string_view>

#include "timelines/metrics.hpp"

namespace gpipe::timelines {

// The first promise `metrics` breaks, as a phrase ("rank 1 is busy 12.000 us
// in a step of 10.000 us"); empty when it keeps them all.
[[nodiscard]] std::string report_violation(const Metrics& metrics);

// Throws InternalError "report check failed for <what>: <violation>" when
// report_violation is not empty. `what` names the report ("the prediction").
void check_report(const Metrics& metrics, std::string_view what);

}  // namespace gpipe::timelines
