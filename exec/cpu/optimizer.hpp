// The optimizers of a training step on the CPU, in fp32 (OptimizerConfig:
// SGD, momentum, AdamW as torch does them). One OptimizerState per layer holds
// that layer's state tensors; the step applies the accumulated gradients and
// zeroes them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cpu {

class OptimizerState {
 public:
  // State for `parameters` (none for sgd, one tensor each for momentum, two for adamw).
  OptimizerState(const OptimizerConfig& config, std::span<const Parameter> parameters);
  // Applies and zeroes the gradients of `parameters` (the same list, same order).
  void step(std::span<Parameter> parameters);
  // Bytes of state held (for the static-memory report).
  [[nodiscard]] std::int64_t bytes() const;

 private:
  OptimizerConfig config_;
  int steps_ = 0;
  std::vector<Tensor> first_;   // momentum buffer / Adam's m
  std::vector<Tensor> second_;  // Adam's v
};

}  // namespace gpipe::exec::cpu
