// The CUDA layers: the layer contract of exec/layers/layer.hpp over device
// tensors, in fp32, each the twin of the CPU layer of its kind (the same
// parameters in the same order, the same stash, and the same initial
// weights, copied from the CPU layer made from the same model, index and
// seed), so the CPU backend is the numerical reference of every CUDA layer.
// Every CPU kind has its twin (layer_kinds.hpp): GPT's embedding,
// transformer_block, lm_head, mlp_block and mse_loss, Llama's token_embedding,
// llama_block and rms_head, DiT's dit_embed, dit_block and dit_head; the
// blocks' attention is naive (P kept) or flash (its log-sum-exp kept) as the
// model says.
//
// A layer is made for one LayerContext (a stage's stream, its cuBLASLt handle
// and its allocator) and enqueues everything on that stream: a call returns
// without waiting for the GPU.
#pragma once

#include <cstdint>
#include <memory>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/layers/layer.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cuda {

class BlasHandle;  // exec/cuda/kernels/gemm.hpp: a pointer is all a context holds

// Where a layer's work goes: its stream (a stage's, in its SM partition), the
// cuBLASLt handle of that stream, and the allocator of its tensors.
struct LayerContext {
  CachingAllocator* allocator = nullptr;
  BlasHandle* blas = nullptr;
  const Stream* stream = nullptr;
};

using DeviceStash = exec::Stash<DeviceTensor>;
using DeviceParameter = exec::Parameter<DeviceTensor>;
using DeviceLayer = exec::Layer<DeviceTensor>;

// Layer `index` of `model` on the device of `context`, its weights uploaded
// from cpu::make_layer(model, index, seed) and its gradients zeroed, on the
// context's stream. Throws InputError for a kind the CUDA backend lacks
// (before the context is looked at), std::logic_error for an incomplete context.
[[nodiscard]] std::unique_ptr<DeviceLayer> make_device_layer(const models::Model& model, int index,
                                                             std::uint64_t seed,
                                                             const LayerContext& context);

}  // namespace gpipe::exec::cuda
