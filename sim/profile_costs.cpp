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
  for (const int b : microbatch_sizes_) of_microbatch_.push_back(find(b)->second->data());
}

ProfileCosts::ProfileCosts(const profiles::Profile& profile, std::span<const int> layers_per_stage,
                           std::vector<int> microbatch_sizes)
    : ProfileCosts(layers_per_stage.size(), std::move(microbatch_sizes),
                   [&](int b) {
                     return std::make_shared<const std::vector<profiles::StageCost>>(
                         profiles::stage_costs(profile, layers_per_stage, b));
                   }) {}

ProfileCosts::ProfileCosts(plan::Planner& planner, std::span<const int> layers_per_stage,
                           std::vector<int> microbatch_sizes)
    : ProfileCosts(layers_per_stage.size(), std::move(microbatch_sizes),
                   [&](int b) { return planner.stage_costs(layers_per_stage, b); }) {}

const std::vector<profiles::StageCost>& ProfileCosts::at_size(int micro_batch_size) const {
  for (const auto& [b, stages] : by_size_) {
    if (b == micro_batch_size) return *stages;
  }
  throw std::out_of_range("ProfileCosts::at_size: not one of the micro-batch sizes given");
}

std::int64_t ProfileCosts::duration_ns(const schedules::Action& action) const {
  using K = schedules::ActionKind;
  switch (action.kind) {
    case K::F:
    case K::R:
      return stage(action.stage, action.microbatch).fwd_ns;
    case K::B:
      return stage(action.stage, action.microbatch).bwd_ns;
    case K::I:
      return stage(action.stage, action.microbatch).bwd_input_ns;
    case K::W:
      return stage(action.stage, action.microbatch).bwd_weight_ns;
    case K::STEP:
      return stage(action.stage, action.microbatch).optimizer_ns;
    default:
      if (schedules::is_housekeeping(action.kind)) return 0;  // no profile field gives it a cost yet
      throw std::logic_error("ProfileCosts: comm actions and send waits have no compute cost");
  }
}

}  // namespace gpipe::sim
