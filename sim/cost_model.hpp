// What the engine asks about compute and memory: how long each compute action
// takes, and how many bytes a stage keeps and sends for a micro-batch. An
// interface (as SimGrid keeps its models), so profiles, analytic costs and
// jitter plug in alike. The engine asks once per action, before it runs.
#pragma once

#include <cstdint>

#include "schedules/action.hpp"
#include "sim/activation_memory.hpp"

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
  // A_s, In_s and W_s together: the engine asks at every memory change, and
  // a model that keeps them side by side answers with one lookup.
  [[nodiscard]] virtual StageMemory stage_memory(schedules::Stage s, schedules::Microbatch m) const {
    return {activation_bytes(s, m), stashed_input_bytes(s, m), weight_grad_stash_bytes(s, m)};
  }
};

}  // namespace gpipe::sim
