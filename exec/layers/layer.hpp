// The contract of a model layer, for every backend: its named parameters with
// their accumulated gradients, and its forward and backward over the
// backend's tensor type. The CPU layers (exec/cpu/layers/, exec::Tensor) are
// the numerical reference; the CUDA layers (exec/cuda/layers/,
// cuda::DeviceTensor) are their twins, with the same parameters in the same
// order and the same stash.
//
// The tensors a forward keeps for the backward are EXACTLY those
// models/model.hpp lists for the layer's kind (in the order of
// exec/layers/layer_layout.hpp), so that the bytes a stage stashes equal
// models::bytes_at(...).activation_bytes and the simulator's memory prediction
// can be checked byte for byte.
//
// Shapes (b = samples in the micro-batch):
//   mlp_block, mse_loss   input f32 [b, H]
//   embedding             input i32 [b, S] (token ids), output f32 [b, S, H]
//   transformer_block     input/output f32 [b, S, H]
//   lm_head               input f32 [b, S, H]
//   loss layers (mse_loss, lm_head) read a target: f32 [b, H] / i32 [b, S], and
//   output the per-sample loss f32 [b]; their grad_output is d(mini-batch
//   loss)/d(per-sample loss), which is 1/N for every sample of an N-sample
//   mini-batch whose loss is the mean.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/runtime/memory_account.hpp"
#include "models/model.hpp"

namespace gpipe::exec {

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

 protected:
  explicit Layer(models::Layer spec) : spec_(std::move(spec)) {}

  models::Layer spec_;
  std::vector<Parameter<Tensor>> parameters_;
};

}  // namespace gpipe::exec
