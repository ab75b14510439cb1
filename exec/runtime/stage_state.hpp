// One pipeline stage as a worker holds it: its layers and their optimizer
// state, and per micro-batch the stashes its forward kept for the backward.
// This is where re-materialisation really happens: after F of a recomputed
// micro-batch every stash tensor but the stage's input is freed, and R rebuilds
// them from that input, so the rank's memory account follows DESIGN.md's
// rules: +A_s during F, down to In_s after it, back to A_s in R, 0 after B.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/runtime/memory_account.hpp"
#include "exec/cpu/optimizer.hpp"
#include "exec/runtime/stash_book.hpp"
#include "exec/cpu/tensor.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

class StageState {
 public:
  // Layers [first_layer, end_layer) of `model`, their weights from `seed`
  // (the same whatever the partition), room for `num_microbatches` stashes
  // charged to `account`.
  StageState(const models::Model& model, int first_layer, int end_layer, std::uint64_t seed,
             const OptimizerConfig& optimizer, int num_microbatches, MemoryAccount* account);

  // Whether the stage ends with the model's loss layer (and so reads targets).
  [[nodiscard]] bool is_last() const { return is_last_; }

  // F(s,m): runs the layers, each keeping its stash. `target` goes to the
  // model's loss layer; pass nullptr unless is_last(). Returns the stage's
  // output (the per-sample loss f32 [b] on the last stage), charged to none.
  [[nodiscard]] Tensor forward(int microbatch, Tensor input, const Tensor* target);
  // After F(s,m) when R(s,m) follows: frees every stash tensor but the input.
  void drop_to_boundary(int microbatch);
  // R(s,m): the forward again from the kept input, rebuilding the stashes.
  void recompute(int microbatch, const Tensor* target);
  // B(s,m): consumes the stashes, last layer first, accumulating the weight
  // gradients; returns the gradient of the stage's input (empty for token ids).
  [[nodiscard]] Tensor backward(int microbatch, const Tensor& grad_output);
  // STEP(s): applies and zeroes every layer's accumulated gradients.
  void step();

  // "block2.w1" for the first parameter whose gradient holds a NaN or an
  // infinity; nullopt when all are finite.
  [[nodiscard]] std::optional<std::string> non_finite_gradient() const;
  // Parameters, gradients and optimizer state held, in bytes.
  [[nodiscard]] std::int64_t static_bytes() const;
  [[nodiscard]] const std::vector<std::unique_ptr<cpu::Layer>>& layers() const { return layers_; }

 private:
  using Book = StashBook<cpu::Stash>;
  [[nodiscard]] Tensor run_layers(int microbatch, Tensor input, const Tensor* target);

  bool is_last_ = false;
  std::vector<std::unique_ptr<cpu::Layer>> layers_;
  std::vector<OptimizerState> optimizers_;  // one per layer
  Book book_;
  MemoryAccount* account_;
};

// Whether every value of an f32 tensor is finite.
[[nodiscard]] bool all_finite(const Tensor& tensor);

}  // namespace gpipe::exec
