// The constructors of the CUDA layer kinds, one per file, twins of the CPU
// kinds of the same names (exec/cpu/layers/layer_kinds.hpp): GPT's mlp_block.cpp,
// mse_loss.cpp, embedding.cpp, transformer_block.cpp, lm_head.cpp; Llama's
// token_embedding.cpp, llama_block.cpp, rms_head.cpp; DiT's dit_embed.cpp,
// dit_block.cpp, dit_head.cpp. make_device_layer() picks one by name
// (device_layer_maker()). Each takes its shapes from the model and its layer
// spec, its parameters already on the device in the CPU layer's order, and
// the context it runs in; the blocks run naive or flash attention as the
// model says, as the CPU's do.
#pragma once

#include <memory>
#include <vector>

#include "exec/cuda/layers/layer.hpp"

namespace gpipe::exec::cuda::layers {

using Parameters = std::vector<DeviceParameter>;

using DeviceLayerMaker = std::unique_ptr<DeviceLayer> (*)(const models::Model&,
                                                          const models::Layer&, Parameters,
                                                          const LayerContext&);

// The constructor of `spec`'s kind in `model`: all that make_device_layer()
// checks of the model and the layer before it looks at the context and
// uploads the weights (host-only, so tests/cuda/host holds it to account).
// InputError naming the layer and the kind when the CUDA backend lacks it;
// no model is refused for its attention (naive and flash both run).
[[nodiscard]] DeviceLayerMaker device_layer_maker(const models::Model& model,
                                                  const models::Layer& spec);

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
[[nodiscard]] std::unique_ptr<DeviceLayer> make_token_embedding(const models::Model& model,
                                                                const models::Layer& spec,
                                                                Parameters parameters,
                                                                const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_llama_block(const models::Model& model,
                                                            const models::Layer& spec,
                                                            Parameters parameters,
                                                            const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_rms_head(const models::Model& model,
                                                         const models::Layer& spec,
                                                         Parameters parameters,
                                                         const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_dit_embed(const models::Model& model,
                                                          const models::Layer& spec,
                                                          Parameters parameters,
                                                          const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_dit_block(const models::Model& model,
                                                          const models::Layer& spec,
                                                          Parameters parameters,
                                                          const LayerContext& context);
[[nodiscard]] std::unique_ptr<DeviceLayer> make_dit_head(const models::Model& model,
                                                         const models::Layer& spec,
                                                         Parameters parameters,
                                                         const LayerContext& context);

}  // namespace gpipe::exec::cuda::layers
