// One pipeline stage as a rank's worker holds it, for every backend: its
// layers and their optimizer state, and per micro-batch the stashes its
// forward kept for the backward. This is where re-materialisation really
// happens: after F of a recomputed micro-batch every stash tensor but the
// stage's input is freed, and R rebuilds them from that input, so the rank's
// memory account follows docs/design.md's rules: +A_s during F, down to In_s after
// it, back to A_s in R, 0 after B; with a split backward, down to W_s (what
// the layers' W keep) during I and to 0 during W.
//
// Under Megatron's full recompute (models/checkpointing.hpp) a stage keeps,
// of each checkpointed chunk of blocks, the chunk's input alone once the
// chunk's forward is done, and B rebuilds each chunk from it, last chunk
// first, just before the chunk's backward: +(kept + T) during F, kept after,
// back up by at most T during B, as the simulator's rules say.
//
// The backend `B` supplies the math, a StageBackend (training_backend.hpp):
// its layers, their optimizer state, and the few whole-tensor operations a
// stage needs (a copy, dst += src, whether all values are finite, the values
// on the host); exec/cpu/cpu_backend.hpp and exec/cuda/backend/cuda_backend.hpp
// are the two.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "exec/layers/layer.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "exec/runtime/stash_book.hpp"
#include "exec/runtime/training_backend.hpp"
#include "exec/runtime/zero_shards.hpp"
#include "models/checkpointing.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

// Not a constrained template: a backend names its own Stage<B> (B::Stage)
// inside its definition, where B is not yet complete; the class is checked
// when it is instantiated, once B is.
template <class B>
class Stage {
  static_assert(StageBackend<B>, "exec::Stage<B>: B must be a StageBackend (exec/runtime/training_backend.hpp)");

 public:
  using Tensor = typename B::Tensor;
  using Context = typename B::Context;

  // Layers [first_layer, end_layer) of `model`, their weights from `seed`
  // (the same whatever the partition), room for `num_microbatches` stashes
  // charged to `account`; with `share`, optimizer state for that replica's
  // share of the stage's values only (ZeRO 1); with `checkpointing`, the
  // checkpoints of full recompute.
  Stage(const models::Model& model, int first_layer, int end_layer, std::uint64_t seed,
        const OptimizerConfig& optimizer, int num_microbatches, MemoryAccount* account,
        Context context, std::optional<ZeroShare> share = std::nullopt,
        const std::optional<models::Checkpointing>& checkpointing = std::nullopt)
      : is_last_(end_layer == static_cast<int>(model.layers.size())),
        context_(std::move(context)),
        book_(num_microbatches, static_cast<std::size_t>(end_layer - first_layer)),
        account_(account) {
    std::vector<std::string> kinds;
    for (int l = first_layer; l < end_layer; ++l) {
      layers_.push_back(B::make_layer(model, l, seed, context_));
      if (layers_.back()->spec().tied_param >= 0) tied_layers_.push_back(layers_.size() - 1);
      kinds.push_back(model.layers[static_cast<std::size_t>(l)].kind);
    }
    units_ = models::checkpoint_units(kinds, checkpointing);
    if (!share) {
      for (auto& layer : layers_) optimizers_.push_back(B::make_optimizer(optimizer, layer->parameters(), context_));
      return;
    }
    // The share is cut over the stage's values in gradients()' order, as
    // the reducer cuts them; each layer's optimizer gets its parameters' runs.
    auto owned = owned_ranges(tensor_sizes(gradients()), share->bucket_elements, share->replicas, share->replica);
    std::size_t next = 0;
    for (auto& layer : layers_) {
      const std::size_t count = layer->parameters().size();
      std::vector<std::vector<ValueRange>> runs(std::make_move_iterator(owned.begin() + static_cast<std::ptrdiff_t>(next)),
                                                std::make_move_iterator(owned.begin() + static_cast<std::ptrdiff_t>(next + count)));
      next += count;
      if constexpr (ShardedOptimizerBackend<B>) {
        optimizers_.push_back(B::make_sharded_optimizer(optimizer, layer->parameters(), std::move(runs), context_));
      } else {
        throw std::logic_error(fmt::format("the {} backend does not shard optimizer state (ZeRO)", B::kName));
      }
    }
  }

  // The step the forwards that follow belong to and, by micro-batch, the
  // mini-batch row of its first sample: what dropout's masks are drawn from
  // (exec/cpu/ops/dropout.hpp), so that F, R and a checkpoint's rebuild draw
  // the same ones. Until it is called: step 0, every micro-batch from row 0.
  void start_step(int step, std::vector<std::int64_t> first_samples) {
    step_ = step;
    first_samples_ = std::move(first_samples);
  }

  // Whether the stage ends with the model's loss layer (and so reads targets).
  [[nodiscard]] bool is_last() const { return is_last_; }

  // F(s,m): the layers in order, each keeping its stash. `target` goes to the
  // model's loss layer; nullptr unless is_last(). Returns the stage's output
  // (the per-sample loss f32 [b] on the last stage), charged to none.
  [[nodiscard]] Tensor forward(int microbatch, Tensor input, const Tensor* target) {
    (void)book_.expect(microbatch, Book::Kept::nothing, "F");
    return run_layers(microbatch, std::move(input), target);
  }

  // After F(s,m) when R(s,m) follows: frees every stash tensor but the input.
  void drop_to_boundary(int microbatch) { book_.keep_boundary(microbatch); }

  // R(s,m): the forward again from the kept input, rebuilding the stashes.
  // The output was handed on by F already; this one is dropped.
  void recompute(int microbatch, const Tensor* target) {
    (void)run_layers(microbatch, book_.take_boundary(microbatch), target);
  }

  // B(s,m): consumes the stashes, last layer first, accumulating the weight
  // gradients; returns the gradient of the stage's input (empty for token ids).
  // A checkpointed chunk is rebuilt from its kept input first.
  [[nodiscard]] Tensor backward(int microbatch, const Tensor& grad_output) {
    auto& stash = book_.expect(microbatch, Book::Kept::everything, "B");
    Tensor grad;
    for (auto unit = units_.rbegin(); unit != units_.rend(); ++unit) {
      if (unit->checkpointed) rebuild(stash, *unit, microbatch);
      for (auto l = static_cast<std::size_t>(unit->end); l-- > static_cast<std::size_t>(unit->first);) {
        layers_[l]->set_samples(samples_of(microbatch));  // a recomputed module draws its masks again
        grad = layers_[l]->backward(std::move(stash[l]), l + 1 == layers_.size() ? grad_output : grad);
      }
    }
    book_.consumed(microbatch);
    return grad;
  }

  // I(s,m): consumes the stashes, last layer first, each layer leaving what
  // its W needs (charged to the rank's account); returns the gradient of the
  // stage's input (empty for token ids). The layers' I may add some weight
  // gradients already (LayerNorm's, the embedding's).
  [[nodiscard]] Tensor input_backward(int microbatch, const Tensor& grad_output) {
    auto& stash = book_.expect(microbatch, Book::Kept::everything, "I");
    std::vector<Stash<Tensor>> weight_stashes(layers_.size());
    Tensor grad;
    for (std::size_t l = layers_.size(); l-- > 0;) {
      layers_[l]->set_samples(samples_of(microbatch));
      grad = layers_[l]->backward_input(std::move(stash[l]),
                                        l + 1 == layers_.size() ? grad_output : grad,
                                        weight_stashes[l], account_);
    }
    book_.hold_for_weight(microbatch, std::move(weight_stashes));
    return grad;
  }

  // W(s,m): the rest of the weight gradients, from what I left; frees it.
  void weight_backward(int microbatch) {
    auto& weight_stashes = book_.expect(microbatch, Book::Kept::weight_stash, "W");
    for (std::size_t l = layers_.size(); l-- > 0;) layers_[l]->backward_weight(std::move(weight_stashes[l]));
    book_.consumed(microbatch);
  }

  // After a failed run: frees what the stashes hold (the run will not go on).
  void drop_stashes() noexcept { book_.clear(); }

  // A tied embedding (schedules/tied_gradient.hpp): a copy of the gradient of
  // the matrix this stage shares with the other end of the pipeline, for
  // REDUCE_GRAD to post to it.
  [[nodiscard]] Tensor tied_gradient_copy() {
    if (tied_layers_.size() != 1) throw std::logic_error("the stage holds no tied layer of a pipeline's end");
    return B::copy_of(tied_gradient(tied_layers_.front()), context_);
  }

  // STEP(s): applies and zeroes every layer's accumulated gradients. With a
  // tied embedding the tied matrix's gradient first gets the other copy's:
  // `partner`, the other end's that WAIT_REDUCE_GRAD received, or, where this
  // stage holds both tied layers (the only stage), its other layer's. Both
  // copies then take the same update from the same sum (a + b = b + a
  // exactly), and stay equal.
  void step(const Tensor* partner = nullptr) {
    if (partner != nullptr) {
      B::add_into(tied_gradient(tied_layers_.at(0)), *partner, context_);
    } else if (tied_layers_.size() == 2) {
      Tensor& first = tied_gradient(tied_layers_[0]);
      Tensor& second = tied_gradient(tied_layers_[1]);
      const Tensor first_alone = B::copy_of(first, context_);
      B::add_into(first, second, context_);
      B::add_into(second, first_alone, context_);
    }
    for (std::size_t l = 0; l < layers_.size(); ++l) optimizers_[l].step(layers_[l]->parameters());
  }

  // "block2.w1" for the first parameter whose gradient holds a NaN or an
  // infinity; nullopt when all are finite. On a device this waits for it.
  [[nodiscard]] std::optional<std::string> non_finite_gradient() const {
    for (const auto& layer : layers_) {
      for (const auto& p : layer->parameters()) {
        if (!B::all_finite(p.grad, context_)) return fmt::format("{}.{}", layer->spec().name, p.name);
      }
    }
    return std::nullopt;
  }

  // Every parameter's value, layer by layer in model order: under ZeRO 1
  // what STEP gathers from the replicas that updated each share.
  [[nodiscard]] std::vector<Tensor*> values() {
    std::vector<Tensor*> out;
    for (auto& layer : layers_) {
      for (auto& p : layer->parameters()) out.push_back(&p.value);
    }
    return out;
  }

  // Every parameter's accumulated gradient, layer by layer in model order:
  // what a data-parallel reduction sums over the replicas before STEP.
  [[nodiscard]] std::vector<Tensor*> gradients() {
    std::vector<Tensor*> out;
    for (auto& layer : layers_) {
      for (auto& p : layer->parameters()) out.push_back(&p.grad);
    }
    return out;
  }

  // Parameters, gradients and optimizer state held, in bytes.
  [[nodiscard]] std::int64_t static_bytes() const {
    std::int64_t bytes = 0;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      for (const auto& p : layers_[l]->parameters()) bytes += p.value.bytes() + p.grad.bytes();
      bytes += optimizers_[l].bytes();
    }
    return bytes;
  }

  // The layers' parameter values on the host, [layer][parameter] (on a device
  // this waits for it).
  [[nodiscard]] std::vector<std::vector<std::vector<float>>> weights() const {
    std::vector<std::vector<std::vector<float>>> out;
    for (const auto& layer : layers_) {
      auto& values = out.emplace_back();
      for (const auto& p : layer->parameters()) values.push_back(B::to_host(p.value, context_));
    }
    return out;
  }

  [[nodiscard]] const std::vector<std::unique_ptr<Layer<Tensor>>>& layers() const { return layers_; }
  [[nodiscard]] const Context& context() const { return context_; }

 private:
  using Book = StashBook<Stash<Tensor>>;

  [[nodiscard]] Tensor& tied_gradient(std::size_t layer) {
    auto& parameters = layers_[layer]->parameters();
    return parameters.at(static_cast<std::size_t>(layers_[layer]->spec().tied_param)).grad;
  }

  // The layers in order; each checkpointed chunk, once done, keeps its
  // input alone (the first tensor of its first layer's stash).
  [[nodiscard]] Tensor run_layers(int microbatch, Tensor input, const Tensor* target) {
    auto& stash = book_.fill(microbatch);
    Tensor x = std::move(input);
    for (const models::CheckpointUnit& unit : units_) {
      for (auto l = static_cast<std::size_t>(unit.first); l < static_cast<std::size_t>(unit.end); ++l) {
        const bool loss_layer = is_last_ && l + 1 == layers_.size();
        layers_[l]->set_samples(samples_of(microbatch));
        x = layers_[l]->forward(std::move(x), loss_layer ? target : nullptr, stash[l], account_);
      }
      if (!unit.checkpointed) continue;
      stash[static_cast<std::size_t>(unit.first)].tensors.resize(1);
      for (int l = unit.first + 1; l < unit.end; ++l) stash[static_cast<std::size_t>(l)].tensors.clear();
    }
    return x;
  }

  // A checkpointed chunk's forward again from its kept input, filling its
  // stashes; its output was handed on by F already and is dropped. (No
  // chunk holds the loss layer: only blocks are checkpointed.)
  void rebuild(std::vector<Stash<Tensor>>& stash, const models::CheckpointUnit& unit, int microbatch) {
    auto& kept = stash[static_cast<std::size_t>(unit.first)].tensors;
    Tensor x = std::move(kept.front());
    kept.clear();
    for (auto l = static_cast<std::size_t>(unit.first); l < static_cast<std::size_t>(unit.end); ++l) {
      layers_[l]->set_samples(samples_of(microbatch));
      x = layers_[l]->forward(std::move(x), nullptr, stash[l], account_);
    }
  }

  [[nodiscard]] ForwardSamples samples_of(int microbatch) const {
    const auto m = static_cast<std::size_t>(microbatch);
    return {.step = step_, .first = m < first_samples_.size() ? first_samples_[m] : 0, .training = true};
  }

  bool is_last_ = false;
  int step_ = 0;
  std::vector<std::int64_t> first_samples_;  // by micro-batch (start_step)
  Context context_;
  std::vector<std::unique_ptr<Layer<Tensor>>> layers_;
  std::vector<typename B::Optimizer> optimizers_;  // one per layer
  std::vector<std::size_t> tied_layers_;  // the layers holding a tied embedding's matrix
  std::vector<models::CheckpointUnit> units_;  // the stage's layers, in order; none checkpointed without full recompute
  Book book_;
  MemoryAccount* account_;
};

}  // namespace gpipe::exec
