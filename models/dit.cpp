// The dit family (Peebles and Xie, arXiv 2212.09748; facebookresearch/DiT
// models.py) and its layer kinds dit_embed, dit_block and dit_head
// (model.hpp gives what they compute and keep). The conditioning vector c
// travels from stage to stage with the tokens, as one more row of the
// activation, [T+1, H], so its bytes count in every message.
#include <cassert>
#include <utility>

#include <fmt/format.h>

#include "models/attention_cost.hpp"
#include "models/families.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

Layer dit_embed_layer(const Model& model) {
  const LayerDims d = layer_dims(model);
  const double h = static_cast<double>(d.hidden);
  const double patches = 2.0 * static_cast<double>(d.seq * d.patch_in) * h;
  const double timestep = 2.0 * static_cast<double>(kTimestepFeatures) * h + 2.0 * h * h;
  Layer layer;
  layer.name = "embed";
  layer.kind = std::string(layer_kind::dit_embed);
  layer.fwd_flops = patches + timestep;
  // No input gradient (the input is data). I does every weight gradient
  // (W keeps nothing) and the timestep MLP's one input gradient, d SiLU out.
  layer.bwd_input_flops = patches + timestep + 2.0 * h * h;
  layer.input_elems = d.seq * d.patch_in + 2;
  layer.output_elems = (d.seq + 1) * d.hidden;
  count_from_layout(layer, layer_layout(layer.kind, d));
  return layer;
}

Layer dit_block_layer(std::string name, const Model& model) {
  const std::int64_t f = 4 * static_cast<std::int64_t>(model.hidden);
  const LayerDims d = layer_dims(model, f);
  const double t = static_cast<double>(d.seq);
  const double h = static_cast<double>(d.hidden);
  // Wqkv, Wo, W1, W2 per token, and adaLN's [6H, H] once per sample.
  const double linears = 2.0 * t * h * (3.0 * h + h + 2.0 * static_cast<double>(f)) + 12.0 * h * h;
  const AttentionFlops attention = attention_flops(d.seq, d.hidden, /*causal=*/false, d.attention);
  Layer layer;
  layer.name = std::move(name);
  layer.kind = std::string(layer_kind::dit_block);
  layer.ffn_width = f;
  // With the cache, T queries attend over 2T keys (the previous chunk's and
  // their own): twice the attention's forward products.
  layer.fwd_flops = linears + (model.attention_cache ? 2.0 : 1.0) * attention.forward;
  if (model.attention_cache) layer.state_elems = 2 * d.seq * d.hidden;  // k and v of T tokens
  layer.bwd_input_flops = linears + attention.backward;
  layer.bwd_weight_flops = linears;
  layer.input_elems = (d.seq + 1) * d.hidden;
  layer.output_elems = (d.seq + 1) * d.hidden;
  count_from_layout(layer, layer_layout(layer.kind, d));
  return layer;
}

Layer dit_head_layer(const Model& model) {
  const LayerDims d = layer_dims(model);
  const double h = static_cast<double>(d.hidden);
  const double linears = 2.0 * static_cast<double>(d.seq * d.patch_out) * h + 4.0 * h * h;
  Layer layer;
  layer.name = "head";
  layer.kind = std::string(layer_kind::dit_head);
  layer.fwd_flops = linears;
  layer.bwd_input_flops = linears;
  layer.bwd_weight_flops = linears;
  layer.input_elems = (d.seq + 1) * d.hidden;
  layer.target_elems = d.seq * d.patch_out;
  layer.output_elems = 1;  // the per-sample loss
  count_from_layout(layer, layer_layout(layer.kind, d));
  return layer;
}

Model build_dit(const DitShape& shape) {
  assert(shape.layers >= 1 && shape.hidden % shape.heads == 0);
  Model model;
  model.family = "dit";
  model.num_blocks = shape.layers;
  model.hidden = shape.hidden;
  model.heads = shape.heads;
  model.kv_heads = shape.heads;
  model.seq = shape.tokens;
  model.attention = shape.attention;
  model.patch = shape.patch;
  model.channels = shape.channels;
  model.classes = shape.classes;
  model.attention_cache = shape.cache;
  model.spec = fmt::format("dit:layers={},hidden={},heads={},tokens={}", shape.layers, shape.hidden,
                           shape.heads, shape.tokens);
  const DitShape defaults;
  if (shape.patch != defaults.patch) model.spec += fmt::format(",patch={}", shape.patch);
  if (shape.channels != defaults.channels) model.spec += fmt::format(",channels={}", shape.channels);
  if (shape.classes != defaults.classes) model.spec += fmt::format(",classes={}", shape.classes);
  if (shape.attention != defaults.attention) {
    model.spec += fmt::format(",attn={}", to_string(shape.attention));
  }
  if (shape.cache) model.spec += ",cache=1";
  model.layers.push_back(dit_embed_layer(model));
  for (int i = 0; i < shape.layers; ++i) {
    model.layers.push_back(dit_block_layer(fmt::format("block{}", i), model));
  }
  model.layers.push_back(dit_head_layer(model));
  return model;
}

}  // namespace gpipe::models
