#include "sim/profile_costs.hpp"

#include <stdexcept>

namespace gpipe::sim {

ProfileCosts::ProfileCosts(const profiles::Profile& profile, std::span<const int> layers_per_stage,
                           std::vector<int> microbatch_sizes)
    : microbatch_sizes_(std::move(microbatch_sizes)) {
  for (const int b : microbatch_sizes_) {
    if (!by_size_.contains(b)) by_size_.emplace(b, profiles::stage_costs(profile, layers_per_stage, b));
  }
}

const profiles::StageCost& ProfileCosts::stage(schedules::Stage s, schedules::Microbatch m) const {
  // STEP carries micro-batch 0; its optimizer cost does not depend on the size.
  return by_size_.at(microbatch_sizes_.at(m.at())).at(s.at());
}

std::int64_t ProfileCosts::duration_ns(const schedules::Action& action) const {
  using K = schedules::ActionKind;
  if (schedules::is_housekeeping(action.kind)) return 0;  // no profile field gives it a cost yet
  const profiles::StageCost& s = stage(action.stage, action.microbatch);
  switch (action.kind) {
    case K::F:
    case K::R:
      return s.fwd_ns;
    case K::B:
      return s.bwd_ns;
    case K::I:
      return s.bwd_input_ns;
    case K::W:
      return s.bwd_weight_ns;
    case K::STEP:
      return s.optimizer_ns;
    default:
      throw std::logic_error("ProfileCosts: comm actions and send waits have no compute cost");
  }
}

}  // namespace gpipe::sim
