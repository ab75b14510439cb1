// A fixed cost added to every action of some kinds, on top of what the
// profile prices: a framework's own time per action, outside the ops a
// profile measures (Python, hooks, a schedule runtime's bookkeeping). How a
// user calibrates gpipe to torch (docs/torch.md): the diff of torch's run
// against a prediction gives each kind's measured mean, and the difference
// goes here (`gpipe-sim run --action-overhead-us F=120,B=200`). It prices the
// action on its stream: REDUCE_GRAD's is its posting on the compute stream,
// not the data-parallel reduction it starts (priced by sim/data_parallel.hpp).
// A cost may also grow with the layers an action runs (per_layer): what a
// runtime or a profiler spends on each op, where every layer runs as many
// (sim/runtime_overhead.hpp measures both from torch's own runs).
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedules/action.hpp"
#include "sim/cost_model.hpp"

namespace gpipe::sim {

using ActionOverheads = std::map<schedules::ActionKind, std::int64_t>;  // ns per action of the kind

// "F=120,B=200.5" (us) -> ns per kind, for the compute stream's kinds (not
// SEND or RECV: the link prices those). InputError naming --action-overhead-us
// for a kind that is not one, twice, or a value that is not a finite number of
// 0 or more microseconds.
[[nodiscard]] ActionOverheads parse_action_overheads(std::string_view text);
[[nodiscard]] std::string to_string(const ActionOverheads& overheads);  // "F=120 us, B=200.5 us"

class OverheadCosts final : public RepricedCosts {
 public:
  // per_layer[kind] is charged once for each of the action's stage's layers
  // (layers_per_stage, one per stage; empty when per_layer is).
  OverheadCosts(const CostModel& base, ActionOverheads per_action, ActionOverheads per_layer = {},
                std::vector<int> layers_per_stage = {});
  OverheadCosts(CostModel&&, ActionOverheads, ActionOverheads = {}, std::vector<int> = {}) = delete;

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  // Per kind, and per stage for the per-layer costs: the base's table, repriced.
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override { return repriced_stage_prices(); }

 private:
  ActionOverheads per_action_;
  ActionOverheads per_layer_;
  std::vector<int> layers_per_stage_;
};

}  // namespace gpipe::sim
