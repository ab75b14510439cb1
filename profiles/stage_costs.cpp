#include "profiles/stage_costs.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "profiles/interpolate.hpp"
#include "profiles/limits.hpp"

namespace gpipe::profiles {
namespace {

// One rounding per stage, not per layer, so that per-layer rounding errors
// do not add up over a deep stage. Refused past what a step's integer ns
// can add up (profiles/limits.hpp).
std::int64_t to_ns(double us, std::size_t stage, const char* what, int micro_batch_size) {
  if (!(us * 1000.0 <= kMaxStepNs)) {
    throw InputError(fmt::format("stage {}: its {} takes {:g} us at micro-batch size {}, past the {:g} ns a step "
                                 "can add up",
                                 stage, what, us, micro_batch_size, kMaxStepNs));
  }
  return std::llround(us * 1000.0);
}

// sum += more, refused when it leaves int64.
void add_bytes(std::int64_t& sum, std::int64_t more, std::size_t stage) {
  if (__builtin_add_overflow(sum, more, &sum)) {
    throw InputError(fmt::format("stage {}: its bytes add up past the 2^63 the engine counts", stage));
  }
}

void check_partition(const Profile& profile, std::span<const int> layers_per_stage) {
  const auto partition = fmt::format("{}", fmt::join(layers_per_stage, ","));
  if (layers_per_stage.empty()) throw InputError("partition: no stages given");
  long long total = 0;
  for (std::size_t s = 0; s < layers_per_stage.size(); ++s) {
    if (layers_per_stage[s] < 1) {
      throw InputError(fmt::format(
          "partition {}: stage {} has {} layers; every stage needs at least one", partition, s,
          layers_per_stage[s]));
    }
    total += layers_per_stage[s];
  }
  if (total != static_cast<long long>(profile.layers.size())) {
    throw InputError(fmt::format("partition {}: {} layers in all, but the profile has {}",
                                 partition, total, profile.layers.size()));
  }
}

}  // namespace

std::vector<StageCost> stage_costs(const Profile& profile, std::span<const int> layers_per_stage,
                                   int micro_batch_size, const std::optional<models::Checkpointing>& checkpointing) {
  check_partition(profile, layers_per_stage);
  if (micro_batch_size < 1) {
    throw InputError(
        fmt::format("micro-batch size must be positive (got {})", micro_batch_size));
  }
  std::vector<StageCost> stages;
  stages.reserve(layers_per_stage.size());
  std::size_t next_layer = 0;
  for (const int count : layers_per_stage) {
    double fwd_us = 0, bwd_us = 0, input_us = 0, weight_us = 0, optimizer_us = 0;
    StageCost stage;
    // Per layer of the stage, for its checkpoints (models/checkpointing.hpp).
    std::vector<std::string> kinds;
    std::vector<double> layer_fwd_us;
    std::vector<std::int64_t> layer_activation, layer_input;
    for (int i = 0; i < count; ++i, ++next_layer) {
      const LayerProfile& layer = profile.layers[next_layer];
      const LayerCost cost = cost_at(layer, micro_batch_size);
      if (checkpointing) {
        kinds.push_back(layer.kind);
        layer_fwd_us.push_back(cost.fwd_us);
        layer_activation.push_back(cost.activation_bytes);
        layer_input.push_back(cost.input_bytes);
      }
      fwd_us += cost.fwd_us;
      bwd_us += cost.bwd_us;
      input_us += cost.bwd_input_us;
      weight_us += cost.bwd_weight_us;
      optimizer_us += layer.optimizer_us;
      add_bytes(stage.activation_bytes, cost.activation_bytes, stages.size());
      add_bytes(stage.weight_grad_stash_bytes, cost.weight_grad_stash_bytes, stages.size());
      add_bytes(stage.param_bytes, layer.param_bytes, stages.size());
      add_bytes(stage.state_bytes, cost.state_bytes, stages.size());
      add_bytes(stage.tied_bytes, layer.tied_bytes, stages.size());
      if (i == 0) stage.input_bytes = cost.input_bytes;
      if (i == count - 1) stage.output_bytes = cost.output_bytes;
    }
    if (checkpointing) {
      const auto units = models::checkpoint_units(kinds, checkpointing);
      const models::CheckpointedBytes bytes = models::checkpointed_bytes(units, layer_activation, layer_input);
      stage.activation_bytes = bytes.kept;
      stage.transient_bytes = bytes.transient;
      // A split backward's W keeps what I left of the rebuilt layers: at most the whole.
      stage.weight_grad_stash_bytes = std::min(stage.weight_grad_stash_bytes, bytes.kept + bytes.transient);
      for (const models::CheckpointUnit& u : units) {
        if (!u.checkpointed) continue;
        for (int l = u.first; l < u.end; ++l) {
          bwd_us += layer_fwd_us[static_cast<std::size_t>(l)];
          input_us += layer_fwd_us[static_cast<std::size_t>(l)];
        }
      }
    }
    const std::size_t s = stages.size();
    stage.fwd_ns = to_ns(fwd_us, s, "forward", micro_batch_size);
    stage.bwd_ns = to_ns(bwd_us, s, "backward", micro_batch_size);
    stage.bwd_input_ns = to_ns(input_us, s, "input backward", micro_batch_size);
    stage.bwd_weight_ns = to_ns(weight_us, s, "weight backward", micro_batch_size);
    stage.optimizer_ns = to_ns(optimizer_us, s, "optimizer step", micro_batch_size);
    stages.push_back(stage);
  }
  return stages;
}

}  // namespace gpipe::profiles
