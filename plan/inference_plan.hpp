// Planning an inference pipeline (docs/design.md, "Inference"): K stages, one per
// rank, each item a micro-batch of b samples. The partitioner balances the
// forward costs alone at b, with GPipe's objective (the smallest largest
// stage, then the smallest variance: models/partition.hpp), since no
// backward runs. A rank holds its stage's weights and nothing of training's
// (no gradients, no optimizer state).
#pragma once

#include <cstdint>
#include <vector>

#include "models/partition.hpp"
#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"

namespace gpipe::plan {

struct InferenceRequest {
  int stages = 1;            // K
  int micro_batch_size = 1;  // b: samples per item
  models::PartitionSpec partition;
};

struct InferencePlan {
  models::Partition partition;
  int micro_batch_size = 1;
  std::vector<profiles::StageCost> stages;  // at b
  std::vector<std::int64_t> static_bytes;   // per rank: its stage's weights (param_bytes)
};

// Throws InputError naming the flag: --stages < 1 or more than the profile's
// layers, --micro-batch-size < 1, a partition that does not fit.
[[nodiscard]] InferencePlan make_inference_plan(const profiles::Profile& profile, const InferenceRequest& request);

}  // namespace gpipe::plan
