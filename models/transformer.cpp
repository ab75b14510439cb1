// The transformer family (GPT-2, pre-LN) and its layer kinds embedding,
// transformer_block and lm_head (model.hpp gives what they compute and keep for
// the backward).
#include <cassert>
#include <utility>

#include <fmt/format.h>

#include "models/attention_cost.hpp"
#include "models/families.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

namespace {

LayerDims dims_of(const TransformerShape& shape, std::int64_t ffn_width = 0) {
  return {.hidden = shape.hidden, .ffn_width = ffn_width, .seq = shape.seq, .heads = shape.heads,
          .vocab = shape.vocab, .attention = shape.attention, .recompute = shape.recompute,
          .dropout = shape.dropout};
}

}  // namespace

Layer embedding_layer(const TransformerShape& shape) {
  const std::int64_t h = shape.hidden;
  const std::int64_t s = shape.seq;
  Layer layer;
  layer.name = "embed";
  layer.kind = std::string(layer_kind::embedding);
  // A gather forward and a scatter-add backward: no matrix products, and no
  // input gradient since the input is integer.
  layer.input_index_bytes = 4 * s;
  layer.output_elems = s * h;
  // Token and position tables; it keeps the ids, for the scatter-add (and
  // its output's dropout mask).
  count_from_layout(layer, layer_layout(layer.kind, dims_of(shape)));
  return layer;
}

Layer transformer_block_layer(std::string name, const TransformerShape& shape) {
  const std::int64_t h = shape.hidden;
  const std::int64_t s = shape.seq;
  const double hd = static_cast<double>(h);
  const double sd = static_cast<double>(s);
  // Wqkv 6SH^2, Wo 2SH^2, W1 8SH^2, W2 8SH^2.
  const double linears = 24.0 * sd * hd * hd;
  // naive: q k^T and P v forward, dq, dk, dP, dv backward, full S x S each.
  const AttentionFlops attention = attention_flops(s, h, /*causal=*/true, shape.attention);
  Layer layer;
  layer.name = std::move(name);
  layer.kind = std::string(layer_kind::transformer_block);
  layer.ffn_width = 4 * h;
  layer.fwd_flops = linears + attention.forward;
  // W1 and W2, 16SH^2, again for recompute=mlp.
  layer.bwd_input_flops = linears + attention.backward +
                          recomputed_flops(shape.recompute, attention.forward, 16.0 * sd * hd * hd);
  layer.bwd_weight_flops = linears;
  layer.input_elems = s * h;
  layer.output_elems = s * h;
  // 12H^2 + 13H parameters; it keeps x, LN1 out, q/k/v (3), attention out, a,
  // LN2 out, pre-GELU (4), GELU out (4) = 16 rows of H per token, two
  // LayerNorms' mean and rstd, and P over all heads: 16SH + 4S + AS^2
  // (attn=flash: the log-sum-exp, AS, for P).
  count_from_layout(layer, layer_layout(layer.kind, dims_of(shape, layer.ffn_width)));
  return layer;
}

Layer lm_head_layer(const TransformerShape& shape) {
  const std::int64_t h = shape.hidden;
  const std::int64_t s = shape.seq;
  const std::int64_t v = shape.vocab;
  const double logits = 2.0 * static_cast<double>(s) * static_cast<double>(h) *
                        static_cast<double>(v);
  Layer layer;
  layer.name = "head";
  layer.kind = std::string(layer_kind::lm_head);
  layer.fwd_flops = logits;
  layer.bwd_input_flops = logits;
  layer.bwd_weight_flops = logits;
  layer.input_elems = s * h;
  layer.target_index_bytes = 4 * s;
  layer.output_elems = 1;  // the per-sample loss
  // A final LayerNorm and the unembedding (no bias); it keeps x, LN out, LN
  // mean and rstd, softmax probabilities, and the targets as int32.
  count_from_layout(layer, layer_layout(layer.kind, dims_of(shape)));
  return layer;
}

Model build_transformer(const TransformerShape& shape) {
  assert(shape.layers >= 1 && shape.hidden >= 1 && shape.heads >= 1 && shape.seq >= 1 &&
         shape.vocab >= 1 && shape.hidden % shape.heads == 0);
  Model model;
  model.spec = fmt::format("transformer:layers={},hidden={},heads={},seq={}", shape.layers,
                           shape.hidden, shape.heads, shape.seq);
  if (shape.vocab != kDefaultVocab) model.spec += fmt::format(",vocab={}", shape.vocab);
  if (shape.attention != Attention::naive) {
    model.spec += fmt::format(",attn={}", to_string(shape.attention));
  }
  if (shape.recompute.any()) model.spec += fmt::format(",recompute={}", to_string(shape.recompute));
  if (shape.dropout > 0) model.spec += fmt::format(",dropout={}", shape.dropout);
  model.family = "transformer";
  model.num_blocks = shape.layers;
  model.hidden = shape.hidden;
  model.heads = shape.heads;
  model.seq = shape.seq;
  model.vocab = shape.vocab;
  model.kv_heads = shape.heads;
  model.attention = shape.attention;
  model.recompute_modules = shape.recompute;
  model.dropout = shape.dropout;
  model.layers.push_back(embedding_layer(shape));
  for (int i = 0; i < shape.layers; ++i) {
    model.layers.push_back(transformer_block_layer(fmt::format("block{}", i), shape));
  }
  model.layers.push_back(lm_head_layer(shape));
  return model;
}

}  // namespace gpipe::models
