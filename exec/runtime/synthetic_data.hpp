// The synthetic training data of docs/design.md: seeded, and with a learnable
// pattern so that the loss falls.
//
// mlp, unbalanced: input x ~ normal(0, 1) [H]; target t_j = 0.5 * x_{(j+1) mod H}
//   (a fixed linear map the residual MLP can learn).
// transformer, llama: token sequences that follow t[s+1] = (5 t[s] + 3) mod V from a
//   random first token, with 1 token in 8 replaced by a uniform random one; the
//   target of position s is the token at s+1 (the sequence is drawn one token
//   longer than S). Attention and the head can learn the recurrence.
// dit: a latent of T patches x ~ normal(0, 1) [T, P*P*C], then a timestep in
//   [0, 1000) and a class label in [0, N), as floats (input [T*P*P*C + 2]);
//   target [T, P*P*2C], t[k][j] = 0.5 * x[k][j mod P*P*C] (a fixed linear map).
//
// A mini-batch depends only on (seed, step), never on how it is split, so
// every schedule and every K, M trains on the same samples.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/runtime/tensor.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

struct Batch {
  Tensor inputs;   // f32 [N, H], i32 [N, S] or (dit) f32 [N, T*P*P*C + 2]
  Tensor targets;  // f32 [N, H], i32 [N, S] or (dit) f32 [N, T, P*P*2C]
};

// Context parallelism: the columns `positions` of token rows [N, S] (i32),
// [N, positions.size()], a member's share of each sequence
// (models::context_positions).
[[nodiscard]] Tensor tokens_at(const Tensor& sequences, const std::vector<std::int64_t>& positions);

class SyntheticTask {
 public:
  SyntheticTask(const models::Model& model, std::uint64_t seed);
  // The mini-batch of `samples` samples for training step `step`.
  [[nodiscard]] Batch batch(int step, std::int64_t samples) const;

 private:
  [[nodiscard]] Batch diffusion_batch(int step, std::int64_t samples) const;

  const models::Model* model_;
  std::uint64_t seed_;
};

}  // namespace gpipe::exec
