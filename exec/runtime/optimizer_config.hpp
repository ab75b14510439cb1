// How a run's optimizer steps, for every backend: SGD, SGD with momentum
// (PyTorch's form: v = mu v + g; w -= lr v) and AdamW (decoupled weight decay,
// bias-corrected, as torch.optim.AdamW). The CPU's arithmetic
// (exec/cpu/optimizer.hpp) is the reference the CUDA kernels match bit for bit.
#pragma once

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

}  // namespace gpipe::exec
