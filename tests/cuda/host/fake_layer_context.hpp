// What the host tests of the CUDA layers share: a LayerContext whose BLAS
// handle and stream are placeholders (the kinds only check that they are
// there; a layer made with it is never run, which would need a GPU), and a
// kind's parameters as its layout lists them, in FakeDeviceMemory.
#pragma once

#include <cstddef>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::test {

struct UnusedHandles {
  alignas(std::max_align_t) std::byte blas[1];
  alignas(std::max_align_t) std::byte stream[1];
  LayerContext context(CachingAllocator& allocator) {
    return {&allocator, reinterpret_cast<BlasHandle*>(blas), reinterpret_cast<const Stream*>(stream)};
  }
};

// The parameters of `spec`'s layout (names, shapes, f32), uninitialised: what
// make_device_layer() would upload, without the upload.
inline layers::Parameters layout_parameters(CachingAllocator& allocator, const models::Model& model,
                                            const models::Layer& spec) {
  layers::Parameters parameters;
  for (const models::ParameterLayout& p : models::layer_layout(model, spec).parameters) {
    DeviceParameter& d = parameters.emplace_back();
    d.name = p.name;
    d.value = DeviceTensor(allocator, p.shape, DeviceType::f32);
    d.grad = DeviceTensor(allocator, p.shape, DeviceType::f32);
  }
  return parameters;
}

}  // namespace gpipe::exec::cuda::test
