// The constructors of the CPU layer kinds, one per file (mlp_block.cpp,
// mse_loss.cpp, embedding.cpp, transformer_block.cpp, lm_head.cpp,
// token_embedding.cpp, llama_block.cpp, rms_head.cpp, dit_embed.cpp,
// dit_block.cpp, dit_head.cpp), behind
// make_layer(). Each takes its shapes from the model and its layer spec and
// draws its weights from `init`.
#pragma once

#include <memory>

#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/ops/init.hpp"
#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/cpu/tensor_parallel_comm.hpp"

namespace gpipe::exec::cpu {

[[nodiscard]] std::unique_ptr<Layer> make_mlp_block(const models::Model& model,
                                                    const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_mse_loss(const models::Model& model,
                                                   const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_embedding(const models::Model& model,
                                                    const models::Layer& spec, NormalInit& init);
// A block (transformer_block, llama_block) of a model split over a
// tensor-parallel group (models::split_tensor_parallel) takes the group;
// whole, none.
[[nodiscard]] std::unique_ptr<Layer> make_transformer_block(const models::Model& model,
                                                            const models::Layer& spec,
                                                            NormalInit& init,
                                                            TensorParallelComm* group = nullptr);
[[nodiscard]] std::unique_ptr<Layer> make_lm_head(const models::Model& model,
                                                  const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_token_embedding(const models::Model& model,
                                                          const models::Layer& spec,
                                                          NormalInit& init);
// With a context-parallel group (a model split by
// models::split_context_parallel), the block holds its member's S / C tokens.
[[nodiscard]] std::unique_ptr<Layer> make_llama_block(const models::Model& model,
                                                      const models::Layer& spec, NormalInit& init,
                                                      TensorParallelComm* group = nullptr,
                                                      ContextParallelComm* context = nullptr);
[[nodiscard]] std::unique_ptr<Layer> make_rms_head(const models::Model& model,
                                                   const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_dit_embed(const models::Model& model,
                                                    const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_dit_block(const models::Model& model,
                                                    const models::Layer& spec, NormalInit& init);
[[nodiscard]] std::unique_ptr<Layer> make_dit_head(const models::Model& model,
                                                   const models::Layer& spec, NormalInit& init);

}  // namespace gpipe::exec::cpu
