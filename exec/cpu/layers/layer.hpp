// One model layer on the CPU, in fp32: its parameters, their accumulated
// gradients, and its forward and backward. The tensors a forward keeps for
// the backward are EXACTLY those models/model.hpp lists for the layer's kind,
// so that the bytes a stage stashes equal models::bytes_at(...).activation_bytes
// and the simulator's memory prediction can be checked byte for byte.
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
#include <memory>
#include <string>
#include <vector>

#include "exec/runtime/memory_account.hpp"
#include "exec/cpu/tensor.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cpu {

// What one layer's forward kept for its backward, in a fixed per-kind order.
struct Stash {
  std::vector<Tensor> tensors;
  [[nodiscard]] std::int64_t bytes() const;
};

// A named parameter and its gradient, same shape. Gradients accumulate over
// backwards until the optimizer step zeroes them.
struct Parameter {
  std::string name;  // "w1", "ln1.gamma", ...
  Tensor value;
  Tensor grad;
};

class Layer {
 public:
  virtual ~Layer() = default;

  [[nodiscard]] const models::Layer& spec() const { return spec_; }
  [[nodiscard]] std::vector<Parameter>& parameters() { return parameters_; }
  [[nodiscard]] const std::vector<Parameter>& parameters() const { return parameters_; }

  // Forward of one micro-batch. `input` is moved in and kept in the stash
  // (it is the first tensor of every kind's stash); `target` is read by loss
  // layers only, which stash a copy of it. Every stash tensor is charged to
  // `stash_account`; temporaries and the output are charged to none.
  [[nodiscard]] virtual Tensor forward(Tensor input, const Tensor* target, Stash& stash,
                                       MemoryAccount* stash_account) = 0;

  // Backward of the micro-batch whose forward filled `stash` (consumed: its
  // bytes are refunded when it goes out of scope). Adds the weight gradients
  // into parameters()[i].grad and returns the gradient of the input, or an
  // empty Tensor when the input is integer (the embedding).
  [[nodiscard]] virtual Tensor backward(Stash stash, const Tensor& grad_output) = 0;

 protected:
  explicit Layer(models::Layer spec) : spec_(std::move(spec)) {}
  // Parameter i's values and gradient, for the kinds' math.
  [[nodiscard]] float* value(std::size_t i) { return parameters_[i].value.data(); }
  [[nodiscard]] float* grad(std::size_t i) { return parameters_[i].grad.data(); }
  models::Layer spec_;
  std::vector<Parameter> parameters_;
};

// The layer `index` of `model`, its parameters initialised from `seed` and the
// index alone (GPT-2 style: normal(0, 0.02) weights, zero biases, LayerNorm
// gamma 1 and beta 0), so that every partition of the model starts from the
// same weights. Throws InputError for a layer kind the CPU backend lacks.
[[nodiscard]] std::unique_ptr<Layer> make_layer(const models::Model& model, int index,
                                                std::uint64_t seed);

}  // namespace gpipe::exec::cpu
