#include "sim/profile_costs.hpp"

#include <algorithm>

namespace gpipe::sim {

template <class StageCostsAt>
ProfileCosts::ProfileCosts(std::size_t num_stages, std::vector<int> microbatch_sizes,
                           const StageCostsAt& stage_costs_at)
    : microbatch_sizes_(std::move(microbatch_sizes)), num_stages_(num_stages) {
  const auto find = [this](int b) {
    return std::find_if(by_size_.begin(), by_size_.end(), [b](const auto& entry) { return entry.first == b; });
  };
  for (const int b : microbatch_sizes_) {
    if (find(b) == by_size_.end()) by_size_.emplace_back(b, stage_costs_at(b));
  }
  of_microbatch_.reserve(microbatch_sizes_.size());
  class_of_.reserve(microbatch_sizes_.size());
  for (const int b : microbatch_sizes_) {
    const auto entry = find(b);
    of_microbatch_.push_back(entry->second->data());
    class_of_.push_back(static_cast<std::uint32_t>(entry - by_size_.begin()));
  }
}

ProfileCosts::ProfileCosts(const profiles::Profile& profile, std::span<const int> layers_per_stage,
                           std::vector<int> microbatch_sizes,
                           const std::optional<models::Checkpointing>& checkpointing)
    : ProfileCosts(layers_per_stage.size(), std::move(microbatch_sizes),
                   [&](int b) {
                     return std::make_shared<const std::vector<profiles::StageCost>>(
                         profiles::stage_costs(profile, layers_per_stage, b, checkpointing));
                   }) {}

ProfileCosts::ProfileCosts(plan::Planner& planner, std::span<const int> layers_per_stage,
                           std::vector<int> microbatch_sizes,
                           const std::optional<models::Checkpointing>& checkpointing)
    : ProfileCosts(layers_per_stage.size(), std::move(microbatch_sizes),
                   [&](int b) { return planner.stage_costs(layers_per_stage, b, checkpointing); }) {}

const std::vector<profiles::StageCost>& ProfileCosts::at_size(int micro_batch_size) const {
  for (const auto& [b, stages] : by_size_) {
    if (b == micro_batch_size) return *stages;
  }
  throw std::out_of_range("ProfileCosts::at_size: not one of the micro-batch sizes given");
}

std::int64_t ProfileCosts::cost_of(const profiles::StageCost& c, schedules::ActionKind kind) {
  using K = schedules::ActionKind;
  switch (kind) {
    case K::F:
    case K::R:
      return c.fwd_ns;
    case K::B:
      return c.bwd_ns;
    case K::I:
      return c.bwd_input_ns;
    case K::W:
      return c.bwd_weight_ns;
    case K::STEP:
      return c.optimizer_ns;
    default:
      if (schedules::is_housekeeping(kind)) return 0;  // no profile field gives it a cost yet
      throw std::logic_error("ProfileCosts: comm actions and send waits have no compute cost");
  }
}

std::int64_t ProfileCosts::duration_ns(const schedules::Action& action) const {
  if (schedules::is_work(action.kind)) return cost_of(stage(action.stage, action.microbatch), action.kind);
  return cost_of(profiles::StageCost{}, action.kind);  // no stage's costs: 0, or the error
}

std::optional<StagePrices> ProfileCosts::stage_prices() const {
  // (The step's prices are micro-batch 0's: without one, the graph replay
  // asks and hears that there is none.)
  if (of_microbatch_.empty()) return std::nullopt;
  using K = schedules::ActionKind;
  StagePrices t;
  t.num_stages = num_stages_;
  t.class_of = class_of_;
  t.work.reserve(by_size_.size() * num_stages_);
  for (const auto& entry : by_size_) {
    for (std::size_t st = 0; st < num_stages_; ++st) {
      const profiles::StageCost& c = (*entry.second)[st];
      t.work.push_back({.fwd_ns = cost_of(c, K::F),
                        .bwd_ns = cost_of(c, K::B),
                        .bwd_input_ns = cost_of(c, K::I),
                        .bwd_weight_ns = cost_of(c, K::W),
                        .recompute_ns = cost_of(c, K::R),
                        .memory = {c.activation_bytes, c.input_bytes, c.weight_grad_stash_bytes, c.transient_bytes},
                        .boundary_bytes = c.output_bytes});
    }
  }
  t.step.reserve(num_stages_);
  for (std::size_t st = 0; st < num_stages_; ++st) {
    const profiles::StageCost& c = of_microbatch_[0][st];
    t.step.push_back({.step_ns = cost_of(c, K::STEP),
                      .reduce_grad_ns = cost_of(c, K::REDUCE_GRAD),
                      .reduction_ns = gradient_reduction_ns(schedules::Stage{static_cast<int>(st)}),
                      .wait_reduce_grad_ns = cost_of(c, K::WAIT_REDUCE_GRAD)});
  }
  return t;
}

}  // namespace gpipe::sim
