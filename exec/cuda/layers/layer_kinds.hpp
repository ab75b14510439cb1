// The constructors of the CUDA layer kinds, one per file (mlp_block.cpp,
// mse_loss.cpp, embedding.cpp, transformer_block.cpp, lm_head.cpp), behind
// make_device_layer(). Each takes its shapes from the model and its layer
// spec, its parameters already on the device in the CPU layer's order, and
// the context it runs in.
#pragma once

#include <memory>
#include <vector>

#include "exec/cuda/layers/layer.hpp"

namespace gpipe::exec::cuda::layers {

using Parameters = std::vector<DeviceParameter>;

[[nodiscard]] std::unique_ptr<DeviceLayer> make_mlp_block(const models::Model& model,
                                                          const models::Layer& spec,
                                                          Parameters parameters,
                                                          const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_mse_loss(const models::Model& model,
                                                         const models::Layer& spec,
                                                         Parameters parameters,
                                                         const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_embedding(const models::Model& model,
                                                          const models::Layer& spec,
                                                          Parameters parameters,
                                                          const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_transformer_block(const models::Model& model,
                                                                  const models::Layer& spec,
                                                                  Parameters parameters,
                                                                  const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_lm_head(const models::Model& model,
                                                        const models::Layer& spec,
                                                        Parameters parameters,
                                                        const LayerContext& context);

}  // namespace gpipe::exec::cuda::layers
