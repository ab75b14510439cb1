// A cost model's prices as a table (CostModel::stage_prices): what each kind
// of action of a stage costs on a micro-batch of each class, micro-batches of
// one class (a profile's: of one size) priced alike, and what each stage
// runs once a step. Every entry is what the model answers for such an
// action, so the direct replay (direct_replay.hpp), which reads the table
// instead of asking action by action, prices every action as the graph
// replay does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/activation_memory.hpp"

namespace gpipe::sim {

class CostModel;

// One stage's work on a micro-batch of one class: what its actions take and
// keep, and the bytes its boundary carries (its output, and the gradient back).
struct WorkPrice {
  std::int64_t fwd_ns = 0;         // F
  std::int64_t bwd_ns = 0;         // B
  std::int64_t bwd_input_ns = 0;   // I
  std::int64_t bwd_weight_ns = 0;  // W
  std::int64_t recompute_ns = 0;   // R
  StageMemory memory;
  std::int64_t boundary_bytes = 0;
  // The boundary's messages over the replay's links (the activation on to
  // s+1, the gradient back from s+1): the direct replay's, left 0 by a model.
  std::int64_t forward_message_ns = 0;
  std::int64_t backward_message_ns = 0;

  bool operator==(const WorkPrice&) const = default;
};

// What a stage runs once a step (actions that carry micro-batch 0): STEP,
// and with data parallelism its REDUCE_GRAD, the reduction that starts on
// its rank's reduce stream (CostModel::gradient_reduction_ns) and its
// WAIT_REDUCE_GRAD.
struct StepPrice {
  std::int64_t step_ns = 0;
  std::int64_t reduce_grad_ns = 0;
  std::int64_t reduction_ns = 0;
  std::int64_t wait_reduce_grad_ns = 0;

  bool operator==(const StepPrice&) const = default;
};

struct StagePrices {
  std::size_t num_stages = 0;
  // Per micro-batch: its class, numbered 0, 1, ... in order of first use.
  std::vector<std::uint32_t> class_of;
  std::vector<WorkPrice> work;  // per (class, stage)
  std::vector<StepPrice> step;  // per stage

  // (Asked at every action of a sweep's replays: two indexed loads.)
  [[nodiscard]] const WorkPrice& at(std::size_t stage, std::size_t microbatch) const {
    return work[class_of[microbatch] * num_stages + stage];
  }
  [[nodiscard]] WorkPrice& at(std::size_t stage, std::size_t microbatch) {
    return work[class_of[microbatch] * num_stages + stage];
  }
  bool operator==(const StagePrices&) const = default;
};

// The table of `model`'s answers with these classes (per micro-batch, 0, 1,
// ... in order of first use): each entry asked of the class's first
// micro-batch (micro-batch 0 for the step's). Exact for a model whose every
// answer depends on the stage, the kind and the class alone.
[[nodiscard]] StagePrices priced_by(const CostModel& model, std::vector<std::uint32_t> class_of,
                                    std::size_t num_stages);

}  // namespace gpipe::sim
