#include "sim/action_overhead.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

ActionOverheads parse_action_overheads(std::string_view text) {
  ActionOverheads out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string_view item = text.substr(from, comma - from);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      throw InputError(fmt::format("--action-overhead-us: '{}' is not KIND=US (such as F=120)", item));
    }
    const std::string_view name = item.substr(0, equals);
    const auto kind = schedules::parse_action_kind(name);
    if (!kind || timelines::stream_of(*kind) != timelines::Stream::compute) {
      throw InputError(fmt::format("--action-overhead-us: '{}' is not a kind of action on the compute stream (F, B, "
                                   "I, W, R, STEP, WAIT_SEND_F, UNSHARD, ...; the link prices SEND and RECV)",
                                   name));
    }
    const std::string value(item.substr(equals + 1));
    double us = 0;
    std::size_t used = 0;
    try {
      us = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(us) || us < 0 || us > 1e9) {
      throw InputError(fmt::format("--action-overhead-us: {}'s '{}' is not a number of microseconds from 0 to 1e9",
                                   name, value));
    }
    if (!out.emplace(*kind, std::llround(us * 1000)).second) {
      throw InputError(fmt::format("--action-overhead-us: {} is given twice", name));
    }
    from = comma + 1;
  }
  return out;
}

OverheadCosts::OverheadCosts(const CostModel& base, ActionOverheads per_action, ActionOverheads per_layer,
                             std::vector<int> layers_per_stage)
    : RepricedCosts(base),
      per_action_(std::move(per_action)),
      per_layer_(std::move(per_layer)),
      layers_per_stage_(std::move(layers_per_stage)) {
  if (!per_layer_.empty() && layers_per_stage_.empty()) {
    throw InputError("an overhead per layer needs the layers of each stage");
  }
}

std::int64_t OverheadCosts::duration_ns(const schedules::Action& action) const {
  std::int64_t ns = base().duration_ns(action);
  if (const auto it = per_action_.find(action.kind); it != per_action_.end()) ns += it->second;
  if (const auto it = per_layer_.find(action.kind); it != per_layer_.end()) {
    const auto stage = static_cast<std::size_t>(action.stage.value);
    if (stage >= layers_per_stage_.size()) {
      throw InputError(fmt::format("an overhead per layer: stage {} is past the {} stages of the partition",
                                   action.stage.value, layers_per_stage_.size()));
    }
    ns += it->second * layers_per_stage_[stage];
  }
  return ns;
}

std::string to_string(const ActionOverheads& overheads) {
  std::vector<std::string> parts;
  for (const auto& [kind, ns] : overheads) {
    parts.push_back(fmt::format("{}={:g} us", schedules::to_string(kind), static_cast<double>(ns) / 1e3));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace gpipe::sim
