// The llama family (Llama 2/3: pre-norm RMSNorm blocks with grouped-query
// attention, rotary position embedding and a SwiGLU feed-forward; the token
// table and the unembedding untied, or with tied=1 one matrix) and its layer
// kinds token_embedding, llama_block and rms_head (model.hpp gives what they
// compute and keep).
#include <cassert>
#include <utility>

#include <fmt/format.h>

#include "models/attention_cost.hpp"
#include "models/families.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

namespace {

Model llama_model(const LlamaShape& shape) {
  Model model;
  model.family = "llama";
  model.num_blocks = shape.layers;
  model.hidden = shape.hidden;
  model.heads = shape.heads;
  model.kv_heads = shape.kv_heads;
  model.seq = shape.seq;
  model.vocab = shape.vocab;
  model.attention = shape.attention;
  model.rope_theta = shape.rope_theta;
  model.tied = shape.tied;
  model.recompute_modules = shape.recompute;
  return model;
}

}  // namespace

Layer token_embedding_layer(const Model& model) {
  Layer layer;
  layer.name = "embed";
  layer.kind = std::string(layer_kind::token_embedding);
  // A gather forward and a scatter-add backward: no matrix products.
  layer.input_index_bytes = 4 * static_cast<std::int64_t>(model.seq);
  layer.output_elems = static_cast<std::int64_t>(model.seq) * model.hidden;
  count_from_layout(layer, layer_layout(model, layer));
  return layer;
}

Layer llama_block_layer(std::string name, const Model& model, std::int64_t ffn_width) {
  const LayerDims d = layer_dims(model, ffn_width);
  const double s = static_cast<double>(d.seq);
  const double h = static_cast<double>(d.hidden);
  // Wqkv [(A+2G)d, H], Wo [H, H], and the SwiGLU's three [F, H] matrices.
  const double linears =
      2.0 * s * h * (static_cast<double>(d.qkv_width()) + h + 3.0 * static_cast<double>(ffn_width));
  const AttentionFlops attention = attention_flops(d.seq, d.hidden, /*causal=*/true, d.attention);
  Layer layer;
  layer.name = std::move(name);
  layer.kind = std::string(layer_kind::llama_block);
  layer.ffn_width = ffn_width;
  layer.fwd_flops = linears + attention.forward;
  // The SwiGLU's gate, up and down again for recompute=mlp.
  layer.bwd_input_flops = linears + attention.backward +
                          recomputed_flops(model.recompute_modules, attention.forward,
                                           6.0 * s * h * static_cast<double>(ffn_width));
  layer.bwd_weight_flops = linears;
  layer.input_elems = d.seq * d.hidden;
  layer.output_elems = d.seq * d.hidden;
  count_from_layout(layer, layer_layout(layer.kind, d));
  return layer;
}

Layer rms_head_layer(const Model& model) {
  const std::int64_t s = model.seq;
  const double logits = 2.0 * static_cast<double>(s) * model.hidden * static_cast<double>(model.vocab);
  Layer layer;
  layer.name = "head";
  layer.kind = std::string(layer_kind::rms_head);
  layer.fwd_flops = logits;
  layer.bwd_input_flops = logits;
  layer.bwd_weight_flops = logits;
  layer.input_elems = s * model.hidden;
  layer.target_index_bytes = 4 * s;
  layer.output_elems = 1;  // the per-sample loss
  count_from_layout(layer, layer_layout(model, layer));
  return layer;
}

Model build_llama(const LlamaShape& shape) {
  assert(shape.layers >= 1 && shape.hidden % shape.heads == 0 && shape.heads % shape.kv_heads == 0);
  Model model = llama_model(shape);
  model.spec = fmt::format("llama:layers={},hidden={},heads={}", shape.layers, shape.hidden, shape.heads);
  if (shape.kv_heads != shape.heads) model.spec += fmt::format(",kv_heads={}", shape.kv_heads);
  model.spec += fmt::format(",ffn={},seq={},vocab={}", shape.ffn, shape.seq, shape.vocab);
  if (shape.attention != Attention::flash) model.spec += fmt::format(",attn={}", to_string(shape.attention));
  if (shape.rope_theta != kDefaultRopeTheta) model.spec += fmt::format(",rope_theta={}", shape.rope_theta);
  if (shape.tied) model.spec += ",tied=1";
  if (shape.recompute.any()) model.spec += fmt::format(",recompute={}", to_string(shape.recompute));
  model.layers.push_back(token_embedding_layer(model));
  for (int i = 0; i < shape.layers; ++i) {
    model.layers.push_back(llama_block_layer(fmt::format("block{}", i), model, shape.ffn));
  }
  model.layers.push_back(rms_head_layer(model));
  if (shape.tied) {
    // The token table tok [V,H] and the unembedding Wu [V,H]: one matrix.
    const std::int64_t elems = static_cast<std::int64_t>(shape.vocab) * shape.hidden;
    Layer& embed = model.layers.front();
    Layer& head = model.layers.back();
    embed.tied_param = static_cast<int>(layout::token_embedding::kTok);
    head.tied_param = static_cast<int>(layout::rms_head::kWu);
    embed.tied_elems = elems;
    head.tied_elems = elems;
  }
  return model;
}

}  // namespace gpipe::models
