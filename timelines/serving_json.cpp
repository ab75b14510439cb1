#include "timelines/serving_json.hpp"

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::timelines {

nlohmann::json serving_run_to_json(const ServingRun& run) {
  nlohmann::json items = nlohmann::json::array();
  for (const ItemTimes& t : run.items) items.push_back({t.arrival_ns, t.admitted_ns, t.completed_ns});
  return {{"items_ns", items},
          {"busy_ns", run.busy_ns},
          {"peak_bytes", run.peak_bytes},
          {"state_bytes", run.state_bytes}};
}

ServingRun serving_run_from_json(const nlohmann::json& json) {
  ServingRun run;
  try {
    for (const auto& t : json.at("items_ns")) {
      run.items.push_back({t.at(0).get<std::int64_t>(), t.at(1).get<std::int64_t>(), t.at(2).get<std::int64_t>()});
    }
    run.busy_ns = json.at("busy_ns").get<std::vector<std::int64_t>>();
    run.peak_bytes = json.at("peak_bytes").get<std::vector<std::int64_t>>();
    run.state_bytes = json.at("state_bytes").get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("a stream's run: {}", e.what()));
  }
  if (run.busy_ns.size() != run.peak_bytes.size() || run.busy_ns.size() != run.state_bytes.size()) {
    throw InputError(fmt::format("a stream's run: {} busy times, {} peaks and {} state sizes for its ranks",
                                 run.busy_ns.size(), run.peak_bytes.size(), run.state_bytes.size()));
  }
  return run;
}

}  // namespace gpipe::timelines
