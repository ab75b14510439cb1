// The cost model of a profile cut into stages: per-stage sums of the layers'
// costs (profiles::stage_costs) at each micro-batch's size. F = fwd, B = bwd,
// R = fwd, I / W = bwd_input / bwd_weight, STEP = optimizer; housekeeping
// (UNSHARD, RESHARD, REDUCE_GRAD, WAIT_REDUCE_GRAD) 0, as no profile prices it yet.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"
#include "sim/cost_model.hpp"

namespace gpipe::sim {

class ProfileCosts final : public CostModel {
 public:
  // microbatch_sizes[m]: the samples in micro-batch m; `checkpointing`, a
  // plan's under recompute full (plan::Plan::checkpointing).
  ProfileCosts(const profiles::Profile& profile, std::span<const int> layers_per_stage,
               std::vector<int> microbatch_sizes,
               const std::optional<models::Checkpointing>& checkpointing = std::nullopt);
  // The same costs, from the planner's profile, which may have them already.
  ProfileCosts(plan::Planner& planner, std::span<const int> layers_per_stage, std::vector<int> microbatch_sizes,
               const std::optional<models::Checkpointing>& checkpointing = std::nullopt);
  // of_microbatch_ points into by_size_'s vectors, which copies share.

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
  [[nodiscard]] StageMemory stage_memory(schedules::Stage s, schedules::Microbatch m) const override {
    const profiles::StageCost& c = stage(s, m);
    return {c.activation_bytes, c.input_bytes, c.weight_grad_stash_bytes, c.transient_bytes};
  }
  [[nodiscard]] std::int64_t tied_gradient_bytes(schedules::Stage s) const override {
    return stage(s, schedules::Microbatch{0}).tied_bytes;
  }
  // Its table, read from the stage costs: a micro-batch's costs are its
  // size's, a class per size.
  [[nodiscard]] std::optional<StagePrices> stage_prices() const override;
  // The stage costs at one micro-batch size (it must be one of the sizes given).
  [[nodiscard]] const std::vector<profiles::StageCost>& at_size(int micro_batch_size) const;
  [[nodiscard]] const std::vector<int>& microbatch_sizes() const { return microbatch_sizes_; }
  [[nodiscard]] std::size_t num_stages() const { return num_stages_; }

  // The costs of stage s for micro-batch m. (STEP carries micro-batch 0; its
  // optimizer cost does not depend on the size.) The engine asks for every
  // action, so this is two indexed loads, not a search.
  [[nodiscard]] const profiles::StageCost& stage(schedules::Stage s, schedules::Microbatch m) const {
    if (m.at() >= of_microbatch_.size() || s.at() >= num_stages_) {
      throw std::out_of_range("ProfileCosts: no such stage or micro-batch");
    }
    return of_microbatch_[m.at()][s.at()];
  }

 private:
  // stage_costs_at(b): the stage costs at micro-batch size b.
  template <class StageCostsAt>
  ProfileCosts(std::size_t num_stages, std::vector<int> microbatch_sizes, const StageCostsAt& stage_costs_at);
  // What an action of `kind` takes by the stage's costs: duration_ns's
  // answer and the table's, alike.
  [[nodiscard]] static std::int64_t cost_of(const profiles::StageCost& c, schedules::ActionKind kind);

  std::vector<int> microbatch_sizes_;
  // One entry per distinct size (at most two: b and b+1), in order of first
  // use; shared with a Planner's table, which keeps it for other plans.
  std::vector<std::pair<int, std::shared_ptr<const std::vector<profiles::StageCost>>>> by_size_;
  std::vector<const profiles::StageCost*> of_microbatch_;  // per micro-batch: its size's stages
  std::vector<std::uint32_t> class_of_;                    // per micro-batch: its size's place in by_size_
  std::size_t num_stages_ = 0;
};

}  // namespace gpipe::sim
