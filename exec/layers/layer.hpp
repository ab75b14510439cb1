// The contract of a model layer, for every backend: its named parameters with
// their accumulated gradients, and its forward and backward over the
// backend's tensor type. The CPU layers (exec/cpu/layers/, exec::Tensor) are
// the numerical reference; the CUDA layers (exec/cuda/layers/,
// cuda::DeviceTensor) are their twins, with the same parameters in the same
// order and the same stash.
//
// The tensors a forward keeps for the backward are EXACTLY those
// models/model.hpp lists for the layer's kind (in the order of
// models/layer_layout.hpp), so that the bytes a stage stashes equal
// models::bytes_at(...).activation_bytes, and those a split backward's I
// leaves for its W equal models::weight_grad_stash_bytes_at(...), and the
// simulator's memory prediction can be checked byte for byte.
//
// Shapes (b = samples in the micro-batch):
//   mlp_block, mse_loss   input f32 [b, H]
//   embedding             input i32 [b, S] (token ids), output f32 [b, S, H]
//   transformer_block     input/output f32 [b, S, H]
//   lm_head, rms_head     input f32 [b, S, H]
//   token_embedding       input i32 [b, S] (token ids), output f32 [b, S, H]
//   llama_block           input/output f32 [b, S, H]
//   dit_embed             input f32 [b, T*P*P*C + 2] (patches, timestep, label), output f32 [b, T+1, H]
//   dit_block             input/output f32 [b, T+1, H] (the tokens, then the conditioning row)
//   dit_head              input f32 [b, T+1, H]
//   loss layers (mse_loss, lm_head, rms_head, dit_head) read a target: f32 [b, H] /
//   i32 [b, S] / f32 [b, T, P*P*2C], and
//   output the per-sample loss f32 [b]; their grad_output is d(mini-batch
//   loss)/d(per-sample loss), which is 1/N for every sample of an N-sample
//   mini-batch whose loss is the mean.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "exec/layers/memory_account.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

// Which samples the forwards that follow compute, for dropout's masks
// (exec/cpu/ops/dropout.hpp): the training step and the mini-batch row of the
// micro-batch's first sample. Outside training (serving, evaluation, a layer
// driven alone) nothing is dropped.
struct ForwardSamples {
  std::int64_t step = 0;
  std::int64_t first = 0;
  bool training = false;
};

// What one layer's forward kept for its backward, in the kind's fixed order.
template <class TensorT>
struct Stash {
  std::vector<TensorT> tensors;

  [[nodiscard]] std::int64_t bytes() const {
    std::int64_t total = 0;
    for (const TensorT& t : tensors) total += t.bytes();
    return total;
  }
};

// A named parameter and its gradient, of the same shape. Gradients accumulate
// over backwards until the optimizer step zeroes them.
template <class TensorT>
struct Parameter {
  std::string name;  // "w1", "ln1.gamma", ...: the same in every backend
  TensorT value;
  TensorT grad;
};

template <class TensorT>
class Layer {
 public:
  using Tensor = TensorT;

  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  [[nodiscard]] const models::Layer& spec() const { return spec_; }
  [[nodiscard]] std::vector<Parameter<Tensor>>& parameters() { return parameters_; }
  [[nodiscard]] const std::vector<Parameter<Tensor>>& parameters() const { return parameters_; }

  // Forward of one micro-batch. `input` is moved in and kept in the stash (it
  // is the first tensor of every kind's stash); `target` is read by loss
  // layers only, which stash a copy of it. Every stash tensor is charged to
  // `stash_account`; temporaries and the output are charged to none.
  [[nodiscard]] virtual Tensor forward(Tensor input, const Tensor* target, Stash<Tensor>& stash,
                                       MemoryAccount* stash_account) = 0;

  // Backward of the micro-batch whose forward filled `stash` (consumed: its
  // bytes are refunded when it goes out of scope). ADDS the weight gradients
  // into parameters()[i].grad and returns the gradient of the input, or an
  // empty tensor when the input is integer (the embedding).
  [[nodiscard]] virtual Tensor backward(Stash<Tensor> stash, const Tensor& grad_output) = 0;

  // The same backward split in two, for zero-bubble schedules; I then W adds
  // the same weight gradients and returns the same input gradient as backward().
  //
  // I: consumes `stash` and returns the input gradient (empty for token ids).
  // It does the weight-gradient work that needs more than W may keep
  // (LayerNorm's gamma and beta; all of it for a kind whose W keeps nothing),
  // and leaves in `weight_stash` what W needs: EXACTLY the tensors
  // models/layer_layout.hpp's weight_kept lists for the kind. Those are
  // charged to `weight_account` (where the forward charged the stash); the
  // account only falls during I: the stash tensors W does not keep are given
  // back first (from then on they are I's temporaries), then the new ones
  // are charged, so a layer goes from its activation bytes to what W keeps.
  //
  // Backends whose layers do not split their backward (the CUDA layers, so
  // far) keep these defaults, which throw std::logic_error; the runtime
  // refuses I/W schedules for such a backend before it runs one.
  [[nodiscard]] virtual Tensor backward_input(Stash<Tensor> /*stash*/, const Tensor& /*grad_output*/,
                                              Stash<Tensor>& /*weight_stash*/,
                                              MemoryAccount* /*weight_account*/) {
    throw std::logic_error(no_split_backward());
  }

  // W: consumes what I left and ADDS the remaining weight gradients into
  // parameters()[i].grad; its bytes are refunded as it goes out of scope.
  virtual void backward_weight(Stash<Tensor> /*weight_stash*/) {
    throw std::logic_error(no_split_backward());
  }

  // Serving runs (docs/design.md "Inference"): what a layer keeps from one
  // item of a sequence to the next (dit's cache=1: its previous chunk's keys
  // and values), for the layers that keep anything (the others keep these
  // defaults). start_sequences() makes that state, zeroed, for `sequences`
  // sequences of micro-batches of `micro_batch_size` samples, charged to
  // `account`, and returns its bytes; select_sequence() says which sequence the
  // forwards that follow serve. A forward without sequences started keeps one
  // of its own, for its size.
  virtual std::int64_t start_sequences(int /*sequences*/, std::int64_t /*micro_batch_size*/,
                                       MemoryAccount* /*account*/) {
    return 0;
  }
  virtual void select_sequence(int /*sequence*/) {}

  // The samples of the forwards that follow (a stage sets it before each
  // one; a recompute sets the same again).
  void set_samples(const ForwardSamples& samples) { samples_ = samples; }

 protected:
  explicit Layer(models::Layer spec) : spec_(std::move(spec)) {}

  [[nodiscard]] std::string no_split_backward() const {
    return "layer " + spec_.name + " (" + spec_.kind +
           "): this backend's layers do not split the backward into I and W";
  }

  models::Layer spec_;
  std::vector<Parameter<Tensor>> parameters_;
  ForwardSamples samples_;
};

}  // namespace gpipe::exec
