// make_context_layer(): a layer of a model split over a context-parallel
// group. Every layer of the llama family computes its member's tokens; the
// blocks' attention alone needs the group (exec/cpu/context_attention.hpp).
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/init.hpp"

namespace gpipe::exec::cpu {

std::unique_ptr<Layer> make_context_layer(const models::Model& model, int index, std::uint64_t seed,
                                          ContextParallelComm& group) {
  const models::Layer& spec = model.layers.at(static_cast<std::size_t>(index));
  if (spec.kind == models::layer_kind::llama_block) {
    NormalInit init(seed, index);
    return make_llama_block(model, spec, init, nullptr, &group);
  }
  if (spec.kind == models::layer_kind::token_embedding || spec.kind == models::layer_kind::rms_head) {
    return make_layer(model, index, seed);
  }
  throw InputError(fmt::format("--context-parallel {}: the CPU executor splits the llama family's sequences, not "
                               "layer {} ({})",
                               group.size(), spec.name, spec.kind));
}

}  // namespace gpipe::exec::cpu
