// What the CPU layer kinds share: the base that makes a kind's parameters
// from its layout (models/layer_layout.hpp: names, shapes, initial values,
// drawn in order from the layer's seed), typed access to their values and
// gradients, and the stash tensors of the layout's shapes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/init.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

class KindLayer : public Layer {
 protected:
  KindLayer(const models::Model& model, const models::Layer& spec, NormalInit& init)
      : Layer(spec), layout_(models::layer_layout(model, spec)) {
    parameters_ = parameters_of(layout_, init);
  }

  [[nodiscard]] float* value(std::size_t i) { return parameters_[i].value.data(); }
  [[nodiscard]] float* grad(std::size_t i) { return parameters_[i].grad.data(); }

  // Stash tensor `i` of the layout at micro-batch size b, zeroed and charged to `account`.
  [[nodiscard]] Tensor kept(std::size_t i, std::int64_t b, MemoryAccount* account) const {
    const bool index = layout_.kept.at(i).element == models::Element::index;
    return {layout_.kept_shape(i, b), index ? ElementType::i32 : ElementType::f32, account};
  }

  models::LayerLayout layout_;
};

}  // namespace gpipe::exec::cpu
