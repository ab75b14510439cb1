// What the CUDA layer kinds share: the base that takes the uploaded
// parameters (checked against the kind's layout, models/layer_layout.hpp)
// and the context the layer runs in, typed access to the parameters' values and
// gradients, and the allocation of stash tensors (charged to the stash
// account) and temporaries (charged to none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"
#include "exec/cuda/layers/ops.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

class KindLayer : public DeviceLayer {
 protected:
  // Throws std::logic_error unless `parameters` are those of the kind's
  // layout (models/layer_layout.hpp), in order, each an f32 value of its
  // shape with a gradient of the same, and unless `context` is complete.
  KindLayer(const models::Model& model, const models::Layer& spec, Parameters parameters,
            const LayerContext& context);

  [[nodiscard]] float* value(std::size_t i) const { return parameters_[i].value.f32(); }
  [[nodiscard]] float* grad(std::size_t i) const { return parameters_[i].grad.f32(); }

  // Stash tensor `i` of the layout at micro-batch size b, charged to `account`; uninitialised.
  [[nodiscard]] DeviceTensor kept(std::size_t i, std::int64_t b, MemoryAccount* account) const {
    const bool index = layout_.kept.at(i).element == models::Element::index;
    return DeviceTensor(*context_.allocator, layout_.kept_shape(i, b),
                        index ? DeviceType::i32 : DeviceType::f32, account);
  }
  // A temporary (or an output), charged to no account; uninitialised.
  [[nodiscard]] static DeviceTensor scratch(const LayerContext& context,
                                            std::vector<std::int64_t> shape) {
    return DeviceTensor(*context.allocator, std::move(shape), DeviceType::f32);
  }
  [[nodiscard]] static RawStream raw(const LayerContext& context) { return context.stream->get(); }

  models::LayerLayout layout_;
  LayerContext context_;
};

}  // namespace gpipe::exec::cuda::layers
