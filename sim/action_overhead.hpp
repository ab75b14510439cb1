// A fixed cost added to every action of some kinds, on top of what the
// profile prices: a framework's own time per action, outside the ops a
// profile measures (Python, hooks, a schedule runtime's bookkeeping). How a
// user calibrates gpipe to torch (docs/torch.md): the diff of torch's run
// against a prediction gives each kind's measured mean, and the difference
// goes here (`gpipe-sim run --action-overhead-us F=120,B=200`). It prices the
// action on its stream: REDUCE_GRAD's is its posting on the compute stream,
// not the data-parallel reduction it starts (priced by sim/data_parallel.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

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
  OverheadCosts(const CostModel& base, ActionOverheads overheads) : RepricedCosts(base), overheads_(std::move(overheads)) {}
  OverheadCosts(CostModel&&, ActionOverheads) = delete;

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override {
    const auto it = overheads_.find(action.kind);
    return base().duration_ns(action) + (it == overheads_.end() ? 0 : it->second);
  }
  // One overhead per kind: the base's table, repriced.
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override { return repriced_stage_prices(); }

 private:
  ActionOverheads overheads_;
};

}  // namespace gpipe::sim
