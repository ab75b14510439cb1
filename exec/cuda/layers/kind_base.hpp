// What the CUDA layer kinds share: the base that takes the uploaded
// parameters (checked against the names the kind expects, in order) and the
// context the layer runs in, typed access to the parameters' values and
// gradients, and the allocation of stash tensors (charged to the stash
// account) and temporaries (charged to none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"
#include "exec/cuda/layers/ops.hpp"

namespace gpipe::exec::cuda::layers {

class KindLayer : public DeviceLayer {
 protected:
  // Throws std::logic_error unless `parameters` are `names`, in order (the
  // CPU layer's), each with an f32 value and a gradient of its shape, and
  // unless `context` is complete.
  KindLayer(const models::Layer& spec, Parameters parameters, const LayerContext& context,
            std::initializer_list<std::string_view> names);

  [[nodiscard]] float* value(std::size_t i) const { return parameters_[i].value.f32(); }
  [[nodiscard]] float* grad(std::size_t i) const { return parameters_[i].grad.f32(); }

  // A tensor of the stash, charged to `account`; uninitialised.
  [[nodiscard]] static DeviceTensor kept(const LayerContext& context,
                                         std::vector<std::int64_t> shape, MemoryAccount* account,
                                         DeviceType type = DeviceType::f32) {
    return DeviceTensor(*context.allocator, std::move(shape), type, account);
  }
  // A temporary (or an output), charged to no account; uninitialised.
  [[nodiscard]] static DeviceTensor scratch(const LayerContext& context,
                                            std::vector<std::int64_t> shape) {
    return DeviceTensor(*context.allocator, std::move(shape), DeviceType::f32);
  }
  [[nodiscard]] static RawStream raw(const LayerContext& context) { return context.stream->get(); }

  LayerContext context_;
};

}  // namespace gpipe::exec::cuda::layers
