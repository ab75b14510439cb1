// Every stage alike, for hand-computed engine tests: F 1000 ns, B 2000 ns,
// STEP 300 ns, the rest free; 1000 bytes between stages, no memory; and the
// tied gradient's bytes a test gives (0: none).
#pragma once

#include <cstdint>

#include "sim/cost_model.hpp"

namespace gpipe::testing {

class UniformStageCosts final : public sim::CostModel {
 public:
  explicit UniformStageCosts(std::int64_t tied_bytes = 0) : tied_bytes_(tied_bytes) {}

  std::int64_t duration_ns(const schedules::Action& action) const override {
    switch (action.kind) {
      case schedules::ActionKind::F: return 1000;
      case schedules::ActionKind::B: return 2000;
      case schedules::ActionKind::STEP: return 300;
      default: return 0;
    }
  }
  std::int64_t boundary_bytes(schedules::Stage, schedules::Microbatch) const override { return 1000; }
  std::int64_t activation_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t stashed_input_bytes(schedules::Stage, schedules::Microbatch) const override { return 0; }
  std::int64_t tied_gradient_bytes(schedules::Stage) const override { return tied_bytes_; }

 private:
  std::int64_t tied_bytes_;
};

}  // namespace gpipe::testing
