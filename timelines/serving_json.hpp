// A measured serving run's times as JSON, without its timeline: each item's
// arrival, admission and completion, and each rank's busy time and peak (ns,
// bytes; integers, so exact). `gpipe-run infer --json` prints it as "run";
// `gpipe-run validate --workload inference --launcher` reads it back from the
// stream it launched.
#pragma once

#include <nlohmann/json.hpp>

#include "timelines/serving_run.hpp"

namespace gpipe::timelines {

[[nodiscard]] nlohmann::json serving_run_to_json(const ServingRun& run);
// Throws InputError naming what is missing or malformed.
[[nodiscard]] ServingRun serving_run_from_json(const nlohmann::json& json);

}  // namespace gpipe::timelines
