// make_layer(): the layer kind's constructor by name.
#include <fmt/format.h>

#include <array>
#include <utility>

#include "base/error.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"

namespace gpipe::exec::cpu {
namespace {

// The blocks whole (a part of a split one: make_layer_part).
std::unique_ptr<Layer> make_whole_transformer_block(const models::Model& model, const models::Layer& spec,
                                                    NormalInit& init) {
  return make_transformer_block(model, spec, init);
}
std::unique_ptr<Layer> make_whole_llama_block(const models::Model& model, const models::Layer& spec,
                                              NormalInit& init) {
  return make_llama_block(model, spec, init);
}

}  // namespace

std::unique_ptr<Layer> make_layer(const models::Model& model, int index, std::uint64_t seed) {
  if (index < 0 || static_cast<std::size_t>(index) >= model.layers.size()) {
    throw InputError(fmt::format("make_layer: layer index {} is outside model {} ({} layers)",
                                 index, model.spec, model.layers.size()));
  }
  using Maker = std::unique_ptr<Layer> (*)(const models::Model&, const models::Layer&, NormalInit&);
  static constexpr std::array<std::pair<std::string_view, Maker>, 11> kinds{{
      {models::layer_kind::mlp_block, &make_mlp_block},
      {models::layer_kind::mse_loss, &make_mse_loss},
      {models::layer_kind::embedding, &make_embedding},
      {models::layer_kind::transformer_block, &make_whole_transformer_block},
      {models::layer_kind::lm_head, &make_lm_head},
      {models::layer_kind::token_embedding, &make_token_embedding},
      {models::layer_kind::llama_block, &make_whole_llama_block},
      {models::layer_kind::rms_head, &make_rms_head},
      {models::layer_kind::dit_embed, &make_dit_embed},
      {models::layer_kind::dit_block, &make_dit_block},
      {models::layer_kind::dit_head, &make_dit_head},
  }};
  const models::Layer& spec = model.layers[static_cast<std::size_t>(index)];
  for (const auto& [kind, maker] : kinds) {
    if (kind != spec.kind) continue;
    NormalInit init(seed, index);
    std::unique_ptr<Layer> layer = maker(model, spec, init);
    // A tied embedding: the last layer's copy of the matrix starts as the
    // first layer's, whatever stage holds either.
    if (spec.tied_param >= 0 && index > 0) {
      const std::unique_ptr<Layer> first = make_layer(model, 0, seed);
      const auto& from = first->parameters().at(static_cast<std::size_t>(model.layers.front().tied_param));
      auto& to = layer->parameters().at(static_cast<std::size_t>(spec.tied_param));
      if (from.value.shape() != to.value.shape()) {
        throw InputError(fmt::format("make_layer: layer {}'s tied parameter {} is not shaped as layer {}'s {}",
                                     spec.name, to.name, model.layers.front().name, from.name));
      }
      to.value = from.value.clone();
    }
    return layer;
  }
  throw InputError(fmt::format("make_layer: layer {} has kind '{}', which the CPU backend lacks",
                               spec.name, spec.kind));
}

}  // namespace gpipe::exec::cpu
