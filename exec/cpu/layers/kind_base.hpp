// What the CPU layer kinds share: the base that makes a kind's parameters
// from its layout (models/layer_layout.hpp: names, shapes, initial values,
// drawn in order from the layer's seed), typed access to their values and
// gradients, the stash tensors of the layout's shapes, and the full backward
// as the split one run at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <initializer_list>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/dropout.hpp"
#include "exec/cpu/ops/init.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/tensor_parallel_comm.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

class KindLayer : public Layer {
 public:
  // B is I then W at once: one copy of the math, so that a split backward
  // gives exactly (bit for bit) the gradients of the full one. What W needs
  // lives only within this call, so what I creates for it is charged to none.
  Tensor backward(Stash stash, const Tensor& grad_output) final {
    Stash weight_stash;
    Tensor grad_input = backward_input(std::move(stash), grad_output, weight_stash, nullptr);
    backward_weight(std::move(weight_stash));
    return grad_input;
  }

  // For the kinds whose W keeps nothing (their I did the whole weight
  // gradient, or they have no parameters).
  void backward_weight(Stash weight_stash) override {
    expect_weight_stash(spec_, weight_stash, layout_.weight_kept.size());
  }

 protected:
  KindLayer(const models::Model& model, const models::Layer& spec, NormalInit& init)
      : Layer(spec),
        layout_(models::layer_layout(model, spec)),
        recompute_(model.recompute_modules),
        dropout_(model.dropout),
        key_(init.key()) {
    parameters_ = parameters_of(layout_, init);
  }

  [[nodiscard]] float* value(std::size_t i) { return parameters_[i].value.data(); }
  [[nodiscard]] float* grad(std::size_t i) { return parameters_[i].grad.data(); }

  // Stash tensor `i` of the layout at micro-batch size b, charged to
  // `account`, not zeroed: the forward writes each one whole. A tensor of a
  // recomputed module (models/recompute_modules.hpp) is a temporary of the
  // pass that makes it, charged to none.
  [[nodiscard]] Tensor kept(std::size_t i, std::int64_t b, MemoryAccount* account) const {
    const models::KeptLayout& k = layout_.kept.at(i);
    return Tensor::uninitialized(layout_.kept_shape(i, b), element_type(k.element), k.recomputed ? nullptr : account);
  }

  // Whether the layout keeps dropout's masks (the model's dropout= > 0).
  [[nodiscard]] bool has_dropout() const { return dropout_ > 0; }
  // The dropout draws of the micro-batch set_samples() named last.
  [[nodiscard]] DropoutDraw dropout_draw() const {
    return {.layer_key = key_, .step = samples_.step, .first_sample = samples_.first, .probability = dropout_,
            .training = samples_.training};
  }

  // At the end of the forward: the recomputed modules' tensors go (their
  // slots stay, empty, until the backward makes them again).
  void drop_recomputed(Stash& stash) const {
    for (std::size_t i = 0; i < stash.tensors.size(); ++i) {
      if (layout_.kept.at(i).recomputed) stash.tensors[i] = Tensor();
    }
  }
  // At the start of the backward: the dropped slots made again, uncharged,
  // for the block to fill by running its modules' forwards again.
  void remake_recomputed(Stash& stash, std::int64_t b) const {
    for (std::size_t i = 0; i < stash.tensors.size(); ++i) {
      if (layout_.kept.at(i).recomputed) stash.tensors[i] = kept(i, b, nullptr);
    }
  }
  [[nodiscard]] const models::RecomputeModules& recomputes() const { return recompute_; }

  // At the start of I: every stash tensor but `kept_for_weight` becomes a
  // temporary of I (charged to none, still readable until I returns), so the
  // account falls first and only then rises by what I creates for W.
  static void release_all_but(Stash& stash, std::initializer_list<std::size_t> kept_for_weight) {
    for (std::size_t i = 0; i < stash.tensors.size(); ++i) {
      bool keep = false;
      for (const std::size_t k : kept_for_weight) keep = keep || k == i;
      if (!keep) stash.tensors[i].charge_to(nullptr);
    }
  }

  // Throws InputError naming the first of ids[0, count) outside [0, vocab):
  // "layer head (lm_head): target id 11 at position 2 is outside [0, 11)".
  // `what` is "token" or "target".
  void expect_ids_below(std::string_view what, const std::int32_t* ids, std::int64_t count,
                        std::int64_t vocab) const {
    for (std::int64_t i = 0; i < count; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        throw InputError(fmt::format("layer {} ({}): {} id {} at position {} is outside [0, {})", spec_.name,
                                     spec_.kind, what, ids[i], i, vocab));
      }
    }
  }

  // loss[n] = the mean of row_loss[n*seq, (n+1)*seq), summed in double: a
  // per-sample loss from its positions' losses (lm_head, rms_head).
  static Tensor mean_per_sample(const Tensor& row_loss, std::int64_t b, std::int64_t seq) {
    Tensor loss({b});
    for (std::int64_t n = 0; n < b; ++n) {
      double sum = 0.0;
      for (std::int64_t s = 0; s < seq; ++s) sum += row_loss.data()[n * seq + s];
      loss.data()[n] = static_cast<float>(sum / static_cast<double>(seq));
    }
    return loss;
  }

  // A block split over a tensor-parallel group (null: whole). y = x W^T +
  // bias + residual, where x W^T is this part's share of a row-parallel
  // Linear when split: summed over the group first, then the bias (whole in
  // every part) and the residual added once.
  static void row_parallel_forward(TensorParallelComm* group, const LinearShape& shape, const float* x,
                                   const float* w, const float* bias, float* y, const float* residual) {
    if (group == nullptr) {
      linear_forward(shape, x, w, bias, y, residual);
      return;
    }
    linear_forward(shape, x, w, nullptr, y);
    group->all_reduce_sum({y, static_cast<std::size_t>(shape.rows * shape.out)});
    add_bias_and_residual(shape, bias, residual, y);
  }

  // A column-parallel Linear's input gradient, this part's share, summed
  // over the group (nothing when whole).
  static void sum_over_group(TensorParallelComm* group, Tensor& partial) {
    if (group != nullptr) group->all_reduce_sum(partial.f32());
  }

  // An empty weight-gradient stash of the layout's size, for I to fill.
  void start_weight_stash(Stash& weight_stash) const {
    weight_stash.tensors.clear();
    weight_stash.tensors.resize(layout_.weight_kept.size());
  }

  models::LayerLayout layout_;
  models::RecomputeModules recompute_;  // what the blocks run again in the backward

 private:
  static ElementType element_type(models::Element element) {
    switch (element) {
      case models::Element::index: return ElementType::i32;
      case models::Element::mask: return ElementType::u8;
      case models::Element::floating: break;
    }
    return ElementType::f32;
  }

  double dropout_;     // Model::dropout
  std::uint64_t key_;  // what its masks are hashed from (NormalInit::key)
};

}  // namespace gpipe::exec::cpu
