// What the engine asks about compute and memory: how long each compute action
// takes, and how many bytes a stage keeps and sends for a micro-batch. An
// interface (as SimGrid keeps its models), so profiles, analytic costs and
// jitter plug in alike. The engine asks once per action, before it runs, or
// reads the model's table of its answers (stage_prices) where it has one.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "schedules/action.hpp"
#include "sim/activation_memory.hpp"
#include "sim/stage_prices.hpp"

namespace gpipe::sim {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Duration of a compute action (F, B, I, W, R, STEP) in integer ns, and of
  // the housekeeping torch's files hold (UNSHARD, RESHARD, REDUCE_GRAD,
  // WAIT_REDUCE_GRAD), which no profile prices yet.
  [[nodiscard]] virtual std::int64_t duration_ns(const schedules::Action& action) const = 0;
  // Bytes of the activation stage s hands to stage s+1 for micro-batch m (its
  // gradient carries the same bytes back).
  [[nodiscard]] virtual std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch m) const = 0;
  // A_s: what the stage keeps for its backward when not recomputing.
  [[nodiscard]] virtual std::int64_t activation_bytes(schedules::Stage s, schedules::Microbatch m) const = 0;
  // In_s: the boundary input a recomputing stage keeps instead.
  [[nodiscard]] virtual std::int64_t stashed_input_bytes(schedules::Stage s, schedules::Microbatch m) const = 0;
  // W_s: what a split backward keeps of A_s from the end of I to the end of W.
  // All of it unless the model knows better.
  [[nodiscard]] virtual std::int64_t weight_grad_stash_bytes(schedules::Stage s, schedules::Microbatch m) const {
    return activation_bytes(s, m);
  }
  // A tied embedding's gradient that stage s exchanges with its partner
  // (schedules/tied_gradient.hpp) before its STEP; 0 without one.
  [[nodiscard]] virtual std::int64_t tied_gradient_bytes(schedules::Stage /*s*/) const { return 0; }
  // With data parallelism (schedules/gradient_reduction.hpp): how long stage
  // s's gradient reduction over its data-parallel group takes, from its
  // REDUCE_GRAD, on the rank's reduce stream; 0 without.
  [[nodiscard]] virtual std::int64_t gradient_reduction_ns(schedules::Stage /*s*/) const { return 0; }
  // A_s, In_s and W_s together: the engine asks at every memory change, and
  // a model that keeps them side by side answers with one lookup.
  [[nodiscard]] virtual StageMemory stage_memory(schedules::Stage s, schedules::Microbatch m) const {
    return {activation_bytes(s, m), stashed_input_bytes(s, m), weight_grad_stash_bytes(s, m)};
  }
  // Where every answer above depends on an action's stage, its kind and the
  // class of its micro-batch alone (a profile's: its size), the answers as
  // a table (stage_prices.hpp). The direct replay (direct_replay.hpp) reads
  // it instead of asking action by action, and runs only for a model that
  // answers. None, the default: a price may depend on more (a jitter's draw
  // is per action), so each action is asked about.
  [[nodiscard]] virtual std::optional<StagePrices> stage_prices() const { return std::nullopt; }
};

// One 64-bit key per action: micro-batch in the low 32 bits, kind in the next
// 8, stage above, so distinct actions (stage < 2^24) never share a key. (The
// jitter's seeds are drawn from it: changing it changes every jittered run.)
[[nodiscard]] inline std::uint64_t action_key(const schedules::Action& a) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a.stage.value)) << 40) |
         (static_cast<std::uint64_t>(a.kind) << 32) |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(a.microbatch.value));
}

// Another model's costs with the durations priced anew (jitter.hpp,
// contention.hpp, data_parallel.hpp): bytes and memory are the base's. It keeps a reference to
// the base, which must outlive it (subclasses refuse a temporary). It has no
// price table unless a subclass says that its repricing depends on the
// stage and the kind alone (and answers repriced_stage_prices()): none is
// the answer that is never wrong.
class RepricedCosts : public CostModel {
 public:
  explicit RepricedCosts(const CostModel& base) : base_(base) {}

  [[nodiscard]] std::int64_t boundary_bytes(schedules::Stage s, schedules::Microbatch m) const final {
    return base_.boundary_bytes(s, m);
  }
  [[nodiscard]] std::int64_t activation_bytes(schedules::Stage s, schedules::Microbatch m) const final {
    return base_.activation_bytes(s, m);
  }
  [[nodiscard]] std::int64_t stashed_input_bytes(schedules::Stage s, schedules::Microbatch m) const final {
    return base_.stashed_input_bytes(s, m);
  }
  [[nodiscard]] std::int64_t weight_grad_stash_bytes(schedules::Stage s, schedules::Microbatch m) const final {
    return base_.weight_grad_stash_bytes(s, m);
  }
  [[nodiscard]] StageMemory stage_memory(schedules::Stage s, schedules::Microbatch m) const final {
    return base_.stage_memory(s, m);
  }
  [[nodiscard]] std::int64_t tied_gradient_bytes(schedules::Stage s) const final {
    return base_.tied_gradient_bytes(s);
  }
  // A repricing may price the reductions too (data_parallel.hpp); else the base's.
  [[nodiscard]] std::int64_t gradient_reduction_ns(schedules::Stage s) const override {
    return base_.gradient_reduction_ns(s);
  }

 protected:
  [[nodiscard]] const CostModel& base() const { return base_; }
  // The base's table, each price asked anew of this model with the base's
  // classes; none where the base has none.
  [[nodiscard]] std::optional<StagePrices> repriced_stage_prices() const {
    std::optional<StagePrices> prices = base_.stage_prices();
    if (!prices) return std::nullopt;
    return priced_by(*this, std::move(prices->class_of), prices->num_stages);
  }

 private:
  const CostModel& base_;
};

}  // namespace gpipe::sim
