// What the engine asks about compute and memory: how long each compute action
// takes, and how many bytes a stage keeps and sends. An interface (as SimGrid
// keeps its models), so profiles, analytic costs and jitter plug in alike.
#pragma once

#include <cstdint>
#include <vector>

#include "profiles/stage_costs.hpp"
#include "schedules/action.hpp"

namespace gpipe::sim {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Duration of a compute action (F, B, I, W, R, STEP) in integer ns.
  [[nodiscard]] virtual std::int64_t duration_ns(const schedules::Action& action) const = 0;
  // Bytes of the activation stage s hands to stage s+1 (its gradient carries the same back).
  [[nodiscard]] virtual std::int64_t boundary_bytes(schedules::Stage stage) const = 0;
  // A_s: what the stage keeps per micro-batch for its backward when not recomputing.
  [[nodiscard]] virtual std::int64_t activation_bytes(schedules::Stage stage) const = 0;
  // In_s: the boundary input a recomputing stage keeps instead.
  [[nodiscard]] virtual std::int64_t stashed_input_bytes(schedules::Stage stage) const = 0;
};

// Costs from per-stage sums of a profile (profiles::stage_costs): F = fwd,
// B = bwd, R = fwd, I / W = bwd_input / bwd_weight, STEP = optimizer.
class StageCostModel final : public CostModel {
 public:
  explicit StageCostModel(std::vector<profiles::StageCost> stages) : stages_(std::move(stages)) {}

  [[nodiscard]] std::int64_t duration_ns(const schedules::Action& action) const override;
  [[nodiscard]] std::int64_t boundary_bytes(schedules::Stage s) const override {
    return stages_.at(s.at()).output_bytes;
  }
  [[nodiscard]] std::int64_t activation_bytes(schedules::Stage s) const override {
    return stages_.at(s.at()).activation_bytes;
  }
  [[nodiscard]] std::int64_t stashed_input_bytes(schedules::Stage s) const override {
    return stages_.at(s.at()).input_bytes;
  }
  [[nodiscard]] const std::vector<profiles::StageCost>& stages() const { return stages_; }

 private:
  std::vector<profiles::StageCost> stages_;
};

}  // namespace gpipe::sim
