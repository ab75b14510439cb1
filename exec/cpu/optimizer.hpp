// The optimizers of a training step, in fp32: SGD, SGD with momentum
// (PyTorch's form: v = mu v + g; w -= lr v) and AdamW (decoupled weight decay,
// bias-corrected, as torch.optim.AdamW). One OptimizerState per layer holds
// that layer's state tensors; the step applies the accumulated gradients and
// zeroes them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/tensor.hpp"
#include "models/optimizer.hpp"

namespace gpipe::exec {

struct OptimizerConfig {
  models::Optimizer kind = models::Optimizer::adamw;
  float learning_rate = 1e-3F;
  float momentum = 0.9F;  // momentum only
  float beta1 = 0.9F;     // adamw only
  float beta2 = 0.999F;
  float epsilon = 1e-8F;
  float weight_decay = 0.01F;  // adamw only (decoupled)
};

class OptimizerState {
 public:
  // State for `parameters` (none for sgd, one tensor each for momentum, two for adamw).
  OptimizerState(const OptimizerConfig& config, std::span<const cpu::Parameter> parameters);
  // Applies and zeroes the gradients of `parameters` (the same list, same order).
  void step(std::span<cpu::Parameter> parameters);
  // Bytes of state held (for the static-memory report).
  [[nodiscard]] std::int64_t bytes() const;

 private:
  OptimizerConfig config_;
  int steps_ = 0;
  std::vector<Tensor> first_;   // momentum buffer / Adam's m
  std::vector<Tensor> second_;  // Adam's v
};

}  // namespace gpipe::exec
