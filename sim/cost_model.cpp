#include "sim/cost_model.hpp"

#include <stdexcept>

namespace gpipe::sim {

std::int64_t StageCostModel::duration_ns(const schedules::Action& action) const {
  using K = schedules::ActionKind;
  const profiles::StageCost& s = stages_.at(action.stage.at());
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
      throw std::logic_error("StageCostModel: comm actions have no compute cost");
  }
}

}  // namespace gpipe::sim
