#include "sim/stage_prices.hpp"

#include <utility>

#include "sim/cost_model.hpp"

namespace gpipe::sim {

using schedules::Action;
using schedules::ActionKind;
using schedules::Microbatch;
using schedules::Stage;

StagePrices priced_by(const CostModel& model, std::vector<std::uint32_t> class_of, std::size_t num_stages) {
  StagePrices t;
  t.num_stages = num_stages;
  t.class_of = std::move(class_of);
  // Classes come in order of first use: a micro-batch of the next one is its first.
  std::uint32_t classes = 0;
  for (std::size_t m = 0; m < t.class_of.size(); ++m) {
    if (t.class_of[m] != classes) continue;
    ++classes;
    const Microbatch mb{static_cast<int>(m)};
    for (std::size_t st = 0; st < num_stages; ++st) {
      const Stage stage{static_cast<int>(st)};
      const auto ns = [&](ActionKind kind) { return model.duration_ns(Action{stage, kind, mb}); };
      t.work.push_back({.fwd_ns = ns(ActionKind::F),
                        .bwd_ns = ns(ActionKind::B),
                        .bwd_input_ns = ns(ActionKind::I),
                        .bwd_weight_ns = ns(ActionKind::W),
                        .recompute_ns = ns(ActionKind::R),
                        .memory = model.stage_memory(stage, mb),
                        .boundary_bytes = model.boundary_bytes(stage, mb)});
    }
  }
  for (std::size_t st = 0; st < num_stages; ++st) {
    const Stage stage{static_cast<int>(st)};
    const auto ns = [&](ActionKind kind) { return model.duration_ns(Action{stage, kind, Microbatch{0}}); };
    t.step.push_back({.step_ns = ns(ActionKind::STEP),
                      .reduce_grad_ns = ns(ActionKind::REDUCE_GRAD),
                      .reduction_ns = model.gradient_reduction_ns(stage),
                      .wait_reduce_grad_ns = ns(ActionKind::WAIT_REDUCE_GRAD)});
  }
  return t;
}

}  // namespace gpipe::sim
