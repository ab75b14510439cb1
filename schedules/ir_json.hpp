// The schedule IR's JSON form, exactly as docs/design.md shows it:
//   {"format": "gpipe-schedule", "version": 1, "name": "gpipe", "num_ranks": 4,
//    "num_stages": 4, "num_microbatches": 8, "stage_to_rank": [0, 1, 2, 3],
//    "recompute": "never", "ranks": [["0F0", ...], ...]}
// An entry of `ranks` is one cell of the CSV form: an action, or an
// overlapped pair as torch writes it, "(0F3;3B1)OVERLAP_F_B".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

[[nodiscard]] nlohmann::json to_json(const Schedule& schedule);

// Reads the JSON form; throws InputError naming `origin` (a file name) and the field.
// Structure only: validate() checks that the schedule makes sense.
[[nodiscard]] Schedule schedule_from_json(const nlohmann::json& doc, std::string_view origin);

}  // namespace gpipe::schedules

namespace gpipe::schedules {

// The JSON form as printed by `gpipe-sim schedule --format json`: one field per
// line and one rank's actions per line, so that a schedule reads like a table.
[[nodiscard]] std::string to_json_text(const Schedule& schedule);

}  // namespace gpipe::schedules
