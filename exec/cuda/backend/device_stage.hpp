// One pipeline stage on the GPU, as a rank's worker holds it: the CUDA twin of
// exec::StageState (exec/runtime/stage_state.hpp), with the same rules, so the memory
// account follows DESIGN.md exactly: +A_s during F, down to In_s after F when
// R follows, back to A_s in R, 0 after B. Every call enqueues on the context's
// stream (the stage's, in its SM partition) and returns without waiting.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/cuda/layers/device_optimizer.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/runtime/memory_account.hpp"
#include "exec/cpu/optimizer.hpp"
#include "exec/runtime/stash_book.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cuda {

class DeviceStage {
 public:
  // Layers [first_layer, end_layer) of `model`, their weights those of
  // cpu::make_layer(model, l, seed) (the same whatever the partition), room
  // for `num_microbatches` stashes charged to `account`.
  DeviceStage(const models::Model& model, int first_layer, int end_layer, std::uint64_t seed,
              const OptimizerConfig& optimizer, int num_microbatches, MemoryAccount* account,
              const LayerContext& context);

  [[nodiscard]] bool is_last() const { return is_last_; }
  [[nodiscard]] const LayerContext& context() const { return context_; }

  // F(s,m): the layers in order, each keeping its stash; `target` goes to the
  // loss layer (nullptr unless is_last()). Returns the stage's output (the
  // per-sample loss f32 [b] on the last stage), charged to none.
  [[nodiscard]] DeviceTensor forward(int microbatch, DeviceTensor input, const DeviceTensor* target);
  // After F(s,m) when R(s,m) follows: frees every stash tensor but the input.
  void drop_to_boundary(int microbatch);
  // R(s,m): the forward again from the kept input.
  void recompute(int microbatch, const DeviceTensor* target);
  // B(s,m): consumes the stashes, last layer first; returns the input gradient
  // (empty for token ids).
  [[nodiscard]] DeviceTensor backward(int microbatch, const DeviceTensor& grad_output);
  // STEP(s): applies and zeroes every layer's gradients.
  void step();

  // Parameters, gradients and optimizer state held, in bytes.
  [[nodiscard]] std::int64_t static_bytes() const;
  [[nodiscard]] const std::vector<std::unique_ptr<DeviceLayer>>& layers() const { return layers_; }
  // The layers' parameter values, [layer][parameter], copied to the host (waits for the stream).
  [[nodiscard]] std::vector<std::vector<std::vector<float>>> download_weights() const;
  // "block2.w1" for the first parameter whose gradient holds a NaN or an
  // infinity, "" when all are finite (waits for the stream).
  [[nodiscard]] std::string non_finite_gradient() const;

 private:
  using Book = StashBook<DeviceStash>;
  [[nodiscard]] DeviceTensor run_layers(int microbatch, DeviceTensor input, const DeviceTensor* target);

  bool is_last_ = false;
  LayerContext context_;
  std::vector<std::unique_ptr<DeviceLayer>> layers_;
  std::vector<DeviceOptimizerState> optimizers_;  // one per layer
  Book book_;
  MemoryAccount* account_;
};

}  // namespace gpipe::exec::cuda
