// The optimizers of a training step on the CPU, in fp32 (OptimizerConfig:
// SGD, momentum, AdamW as torch does them). One OptimizerState per layer holds
// that layer's state tensors; the step applies the accumulated gradients and
// zeroes them. Under ZeRO 1 (exec/runtime/zero_shards.hpp) it holds state for,
// and updates, only the runs of each parameter its replica owns.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/tensor.hpp"
#include "exec/runtime/zero_shards.hpp"

namespace gpipe::exec::cpu {

class OptimizerState {
 public:
  // State for `parameters` (none for sgd, one tensor each for momentum, two for adamw).
  OptimizerState(const OptimizerConfig& config, std::span<const Parameter> parameters);
  // State for the runs `owned[i]` of each parameter i only (ZeRO 1's share).
  OptimizerState(const OptimizerConfig& config, std::span<const Parameter> parameters,
                 std::vector<std::vector<ValueRange>> owned);
  // Applies the gradients of `parameters` (the same list, same order) to the
  // values it holds state for, and zeroes every gradient whole.
  void step(std::span<Parameter> parameters);
  // Bytes of state held (for the static-memory report).
  [[nodiscard]] std::int64_t bytes() const;

 private:
  OptimizerConfig config_;
  int steps_ = 0;
  std::vector<std::vector<ValueRange>> owned_;  // per parameter: the runs it updates
  std::vector<Tensor> first_;   // momentum buffer / Adam's m, the owned runs end to end
  std::vector<Tensor> second_;  // Adam's v, the same
};

}  // namespace gpipe::exec::cpu
