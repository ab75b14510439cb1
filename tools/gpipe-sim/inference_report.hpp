// What `gpipe-sim run --workload inference` prints: the configuration, the
// stream's metrics beside their closed forms, the bottleneck, and a table per
// rank; or the same as JSON (--json).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "profiles/profile.hpp"
#include "sim/inference/predict.hpp"

namespace gpipe::tools {

[[nodiscard]] std::string format_inference(const sim::inference::Prediction& p, const sim::inference::Scenario& sc,
                                           const profiles::Profile& profile, const std::string& profile_path);

// {"config": {...}, "metrics": schedules::to_json, "stochastic": ... (with jitter)}.
[[nodiscard]] nlohmann::json inference_json(const sim::inference::Prediction& p, const sim::inference::Scenario& sc,
                                            const profiles::Profile& profile, const std::string& profile_path);

}  // namespace gpipe::tools
