// The CPU layers: the layer contract of exec/layers/layer.hpp over host
// tensors, in fp32, the numerical reference of every backend. One file per
// kind (layer_kinds.hpp), on the base of kind_base.hpp; the math they are
// made of is in exec/cpu/ops/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "exec/cpu/context_parallel_comm.hpp"
#include "exec/cpu/tensor_parallel_comm.hpp"
#include "exec/layers/layer.hpp"
#include "exec/runtime/tensor.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cpu {

using Stash = exec::Stash<Tensor>;
using Parameter = exec::Parameter<Tensor>;
using Layer = exec::Layer<Tensor>;

// The layer `index` of `model`, its parameters initialised from `seed` and the
// index alone (GPT-2 style: normal(0, 0.02) weights, zero biases, LayerNorm
// gamma 1 and beta 0), so that every partition of the model starts from the
// same weights. Throws InputError for a layer kind the CPU backend lacks.
[[nodiscard]] std::unique_ptr<Layer> make_layer(const models::Model& model, int index,
                                                std::uint64_t seed);

// Part group.rank() of layer `index` split over a tensor-parallel `group`
// (exec/cpu/layers/tensor_parallel_part.cpp): a transformer or llama block's
// heads and feed-forward columns, its weights the whole layer's slice; any
// other layer whole. With a context-parallel group too (`model` split over
// it), the part of a llama block over the member's tokens (make_context_layer).
[[nodiscard]] std::unique_ptr<Layer> make_layer_part(const models::Model& model, int index, std::uint64_t seed,
                                                     TensorParallelComm& group,
                                                     ContextParallelComm* context = nullptr);
// Layer `index` of `model` split over a context-parallel `group` (a model
// split by models::split_context_parallel; exec/cpu/layers/context_parallel_part.cpp):
// a llama block that gathers the group's keys and values, any other layer
// make_layer()'s over the member's tokens. The weights are make_layer()'s,
// whole in every member. Throws InputError for a kind it does not split.
[[nodiscard]] std::unique_ptr<Layer> make_context_layer(const models::Model& model, int index, std::uint64_t seed,
                                                        ContextParallelComm& group);
// Whether a layer kind is split so (the blocks), not held whole.
[[nodiscard]] bool splits(std::string_view kind);
// Part `part` of `parts` of parameter `param` of block `index`, from the
// whole layer's values of it, shaped `shape` (as make_layer_part slices them).
[[nodiscard]] std::vector<float> parameter_part(const models::Model& model, int index, std::size_t param,
                                                std::span<const float> whole, std::span<const std::int64_t> shape,
                                                int part, int parts);

}  // namespace gpipe::exec::cpu
