// How the command lines print a Timeline's metrics (timelines/metrics.hpp):
// the summary (step time, throughput, both bubble conventions, each beside its
// closed form) and the per-rank table (layers, busy, utilisation, peak
// activation, static, total). `gpipe-sim run` prints a prediction with them and
// `gpipe-run train` a measurement, so the two read alike line for line.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "models/partition.hpp"
#include "schedules/ids.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::tools {

// "step time ...", "throughput ...", "bubble ...", "bubble / ideal ...", then a blank line.
// `schedule_name` picks the family's closed-form bubble printed beside the value.
[[nodiscard]] std::string format_metrics_summary(const timelines::Metrics& metrics,
                                                 std::string_view schedule_name);

// One row per rank; rank r holds the layers of the stages `stage_to_rank`
// puts on it ("0-5,18-23"), or of stage r when it is empty (one stage per
// rank). `static_label` heads the static-memory column, e.g. "static (adamw, bf16)".
[[nodiscard]] std::string format_rank_table(const timelines::Metrics& metrics,
                                            const models::Partition& partition,
                                            std::string_view static_label,
                                            std::span<const schedules::Rank> stage_to_rank = {});

}  // namespace gpipe::tools
