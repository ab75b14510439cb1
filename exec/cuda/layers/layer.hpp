// One model layer on the GPU, in fp32: the CUDA twin of exec/cpu/layers/layer.hpp,
// with the same forward/backward contract, the same stash (EXACTLY the tensors
// models/model.hpp lists, so the bytes charged equal
// models::bytes_at(...).activation_bytes) and the same initial weights (copied
// from the CPU layer made from the same model, index and seed), so the CPU
// backend is the numerical reference of every CUDA layer.
//
// Everything a call enqueues runs on the context's stream; a call returns
// without waiting for the GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/runtime/memory_account.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cuda {

class BlasHandle;  // exec/cuda/kernels/gemm.hpp: a pointer is all a context holds

// Where a layer's work goes: its stream (a stage's, in its SM partition), the
// cuBLASLt handle of that stream, and the allocator of its temporaries.
struct LayerContext {
  CachingAllocator* allocator = nullptr;
  BlasHandle* blas = nullptr;
  const Stream* stream = nullptr;
};

struct DeviceStash {
  std::vector<DeviceTensor> tensors;
  [[nodiscard]] std::int64_t bytes() const;
};

struct DeviceParameter {
  std::string name;  // as the CPU layer names it
  DeviceTensor value;
  DeviceTensor grad;
};

class DeviceLayer {
 public:
  virtual ~DeviceLayer() = default;

  [[nodiscard]] const models::Layer& spec() const { return spec_; }
  [[nodiscard]] std::vector<DeviceParameter>& parameters() { return parameters_; }
  [[nodiscard]] const std::vector<DeviceParameter>& parameters() const { return parameters_; }

  // As cpu::Layer::forward: `input` moves into the stash; loss layers read
  // `target` (and stash a copy); stash tensors are charged to `stash_account`.
  [[nodiscard]] virtual DeviceTensor forward(const LayerContext& context, DeviceTensor input,
                                             const DeviceTensor* target, DeviceStash& stash,
                                             MemoryAccount* stash_account) = 0;
  // As cpu::Layer::backward: consumes the stash, ADDS weight gradients, returns
  // the input gradient (empty for the embedding).
  [[nodiscard]] virtual DeviceTensor backward(const LayerContext& context, DeviceStash stash,
                                              const DeviceTensor& grad_output) = 0;

 protected:
  explicit DeviceLayer(models::Layer spec) : spec_(std::move(spec)) {}
  models::Layer spec_;
  std::vector<DeviceParameter> parameters_;
};

// Layer `index` of `model` on the device, its weights uploaded from
// cpu::make_layer(model, index, seed) and its gradients zeroed, on the
// context's stream. Throws InputError for a kind the CUDA backend lacks.
[[nodiscard]] std::unique_ptr<DeviceLayer> make_device_layer(const models::Model& model, int index,
                                                             std::uint64_t seed,
                                                             const LayerContext& context);

}  // namespace gpipe::exec::cuda
