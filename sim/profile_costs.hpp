// The cost model of a profile cut into stages: per-stage sums of the layers'
// costs (profiles::stage_costs) at each micro-batch's size. F = fwd, B = bwd,
// R = fwd, I / W = bwd_input / bwd_weight, STEP = optimizer; housekeeping
// (UNSHARD, RESHARD, REDUCE_GRAD, WAIT_REDUCE_GRAD) 0, as no profile prices it yet.
#pragma once

#include <map>
#include <span>
#include <vector>

#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"
#include "sim/cost_model.hpp"

namespace gpipe::sim {

class ProfileCosts final : public CostModel {
 public:
  // microbatch_sizes[m]: the samples in micro-batch m.
  ProfileCosts(const profiles::Profile& profile, std::span<const int> layers_per_stage,
               std::vector<int> microbatch_sizes);

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  [[nodiscard]] std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return stage(s, m).output_bytes;
  }
  [[nodiscard]] std::int64_t activation_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return stage(s, m).activation_bytes;
  }
  [[nodiscard]] std::int64_t stashed_input_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return stage(s, m).input_bytes;
  }
  [[nodiscard]] std::int64_t weight_grad_stash_bytes(schedules::Stage s, schedules::Microbatch m) const override {
    return stage(s, m).weight_grad_stash_bytes;
  }
  // The stage costs at one micro-batch size (it must be one of the sizes given).
  [[nodiscard]] const std::vector<profiles::StageCost>& at_size(int micro_batch_size) const {
    return by_size_.at(micro_batch_size);
  }

 private:
  [[nodiscard]] const profiles::StageCost& stage(schedules::Stage s, schedules::Microbatch m) const;

  std::vector<int> microbatch_sizes_;
  std::map<int, std::vector<profiles::StageCost>> by_size_;  // at most two sizes: b and b+1
};

}  // namespace gpipe::sim
