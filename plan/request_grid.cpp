#include "plan/request_grid.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpipe::plan {

std::vector<PlanRequest> RequestGrid::requests() const {
  std::vector<PlanRequest> all;
  all.reserve(static_cast<std::size_t>(size()));
  for (std::int64_t i = 0; i < size(); ++i) all.push_back(request(i));
  return all;
}

PlanRequest RequestGrid::request(std::int64_t index) const {
  // Mixed-radix digits of the index, M the fastest.
  const auto digit = [&index](std::size_t radix) {
    const auto d = static_cast<std::size_t>(index % static_cast<std::int64_t>(radix));
    index /= static_cast<std::int64_t>(radix);
    return d;
  };
  PlanRequest r = base;
  r.microbatches = microbatches[digit(microbatches.size())];
  r.stages = stages[digit(stages.size())];
  r.recompute = recompute[digit(recompute.size())];
  r.stages_per_rank = stages_per_rank[digit(stages_per_rank.size())];
  r.schedule = schedules[digit(schedules.size())];
  return r;
}

nlohmann::json grid_row_json(const PlanRequest& r, const std::string& skipped) {
  nlohmann::json row = {{"schedule", r.schedule},
                        {"recompute", std::string(schedules::to_string(r.recompute))},
                        {"stages", r.stages},
                        {"microbatches", r.microbatches},
                        {"batch", r.batch},
                        {"status", skipped.empty() ? "ok" : "skipped"}};
  if (r.stages_per_rank > 0) row["stages_per_rank"] = r.stages_per_rank;
  if (!skipped.empty()) row["reason"] = skipped;
  return row;
}

std::string grid_row_csv(const PlanRequest& r, const std::string& skipped, int metric_cells) {
  // A schedule file's name may hold a comma.
  std::string row = fmt::format("{},{},{},{},{},", csv_cell(r.schedule), schedules::to_string(r.recompute),
                                r.stages, r.stages_per_rank > 0 ? std::to_string(r.stages_per_rank) : "",
                                r.microbatches);
  if (skipped.empty()) return row;
  return row + fmt::format(",{},,skipped,{}{}\n", r.batch, csv_cell(skipped),
                           std::string(static_cast<std::size_t>(metric_cells), ','));
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string csv_number(std::optional<double> value, int decimals) {
  return value ? fmt::format("{:.{}f}", *value, decimals) : std::string();
}

}  // namespace gpipe::plan
