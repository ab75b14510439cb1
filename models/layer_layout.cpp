#include "models/layer_layout.hpp"

#include <initializer_list>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/model.hpp"

namespace gpipe::models {

namespace {

// Marks the tensors of each module `d.recompute` names (models/recompute_modules.hpp).
void mark_recomputed(LayerLayout& l, const RecomputeModules& modules, std::initializer_list<std::size_t> core_attn,
                     std::initializer_list<std::size_t> mlp, std::initializer_list<std::size_t> layernorm) {
  const auto mark = [&](bool on, std::initializer_list<std::size_t> kept) {
    for (const std::size_t k : kept) l.kept.at(k).recomputed = l.kept.at(k).recomputed || on;
  };
  mark(modules.core_attn, core_attn);
  mark(modules.mlp, mlp);
  mark(modules.layernorm, layernorm);
}

LayerLayout mlp_block_layout(const LayerDims& d) {
  using namespace layout::mlp_block;
  const std::int64_t h = d.hidden, f = d.ffn_width;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma] = {"ln.gamma", {h}, Init::ones};
  l.parameters[kBeta] = {"ln.beta", {h}, Init::zeros};
  l.parameters[kW1] = {"w1", {f, h}, Init::normal};
  l.parameters[kC1] = {"c1", {f}, Init::zeros};
  l.parameters[kW2] = {"w2", {h, f}, Init::normal};
  l.parameters[kC2] = {"c2", {h}, Init::zeros};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {h}};
  l.kept[kNormed] = {"ln", {h}};
  l.kept[kStats] = {"ln.stats", {2}};
  l.kept[kPreGelu] = {"pre_gelu", {f}};
  l.kept[kGelu] = {"gelu", {f}};
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed] = {"ln", {h}};
  l.weight_kept[weight_kept::kDPreGelu] = {"d_pre_gelu", {f}};
  l.weight_kept[weight_kept::kGelu] = {"gelu", {f}};
  l.weight_kept[weight_kept::kDOut] = {"d_out", {h}};
  return l;
}

LayerLayout mse_loss_layout(const LayerDims& d) {
  using namespace layout::mse_loss;
  LayerLayout l;
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {d.hidden}};
  l.kept[kTarget] = {"target", {d.hidden}};
  return l;
}

LayerLayout embedding_layout(const LayerDims& d) {
  using namespace layout::embedding;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kTok] = {"tok", {d.vocab_rows(), d.hidden}, Init::normal};
  l.parameters[kPos] = {"pos", {d.seq, d.hidden}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kIds] = {"ids", {d.tokens()}, Element::index};
  if (d.dropout > 0) l.kept.push_back({"dropout.mask", {d.rows(), d.hidden}, Element::mask});
  return l;
}

LayerLayout transformer_block_layout(const LayerDims& d) {
  using namespace layout::transformer_block;
  // Tensor parallelism splits Wqkv and W1 by rows (column-parallel: heads and
  // F / T), Wo and W2 by columns (row-parallel, their biases whole); what
  // lies between them is split, the residual stream and the LayerNorms are
  // whole, or split over the sequence (rows()).
  const std::int64_t h = d.hidden, f = d.split(d.ffn_width), s = d.tokens(), r = d.rows();
  const std::int64_t qkv = d.split(3 * h), attn = d.split(h);
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma1] = {"ln1.gamma", {h}, Init::ones};
  l.parameters[kBeta1] = {"ln1.beta", {h}, Init::zeros};
  l.parameters[kWqkv] = {"wqkv", {qkv, h}, Init::normal};
  l.parameters[kBqkv] = {"bqkv", {qkv}, Init::zeros};
  l.parameters[kWo] = {"wo", {h, attn}, Init::normal};
  l.parameters[kBo] = {"bo", {h}, Init::zeros};
  l.parameters[kGamma2] = {"ln2.gamma", {h}, Init::ones};
  l.parameters[kBeta2] = {"ln2.beta", {h}, Init::zeros};
  l.parameters[kW1] = {"w1", {f, h}, Init::normal};
  l.parameters[kB1] = {"b1", {f}, Init::zeros};
  l.parameters[kW2] = {"w2", {h, f}, Init::normal};
  l.parameters[kB2] = {"b2", {h}, Init::zeros};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {r, h}};
  l.kept[kNormed1] = {"ln1", {r, h}};
  l.kept[kQkv] = {"qkv", {s, qkv}};
  l.kept[kProbs] = {d.attention == Attention::flash ? "attention.lse" : "attention.probs",
                    d.attention_kept()};
  l.kept[kAttn] = {"attention", {s, attn}};
  l.kept[kA] = {"a", {r, h}};
  l.kept[kNormed2] = {"ln2", {r, h}};
  l.kept[kPreGelu] = {"pre_gelu", {s, f}};
  l.kept[kGelu] = {"gelu", {s, f}};
  l.kept[kStats1] = {"ln1.stats", {r, 2}};
  l.kept[kStats2] = {"ln2.stats", {r, 2}};
  // With sequence parallelism W keeps the LayerNorms' outputs and the
  // row-parallel Linears' output gradients split, and gathers them again.
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed1] = {"ln1", {r, h}};
  l.weight_kept[weight_kept::kDQkv] = {"d_qkv", {s, qkv}};
  l.weight_kept[weight_kept::kAttn] = {"attention", {s, attn}};
  l.weight_kept[weight_kept::kDA] = {"d_a", {r, h}};
  l.weight_kept[weight_kept::kNormed2] = {"ln2", {r, h}};
  l.weight_kept[weight_kept::kDPreGelu] = {"d_pre_gelu", {s, f}};
  l.weight_kept[weight_kept::kGelu] = {"gelu", {s, f}};
  l.weight_kept[weight_kept::kDOut] = {"d_out", {r, h}};
  if (d.dropout > 0) {
    l.kept.push_back({"attention.out.mask", {r, h}, Element::mask});
    l.kept.push_back({"mlp.out.mask", {r, h}, Element::mask});
    if (d.attention == Attention::naive) {
      l.kept.push_back({"attention.probs.mask", d.attention_kept(), Element::mask});
      l.kept.push_back({"attention.dropped", d.attention_kept()});
    }
  }
  // The probabilities' mask and their dropped copy are the core attention's
  // (Megatron-LM's selective recompute draws them again).
  mark_recomputed(l, d.recompute, {kProbs}, {kPreGelu, kGelu}, {kNormed1, kNormed2, kStats1, kStats2});
  if (l.kept.size() == kKeptWithDropout) {
    mark_recomputed(l, d.recompute, {kProbsMask, kDroppedProbs}, {}, {});
  }
  return l;
}

LayerLayout lm_head_layout(const LayerDims& d) {
  using namespace layout::lm_head;
  // Tensor parallelism splits Wu by vocabulary rows (ceil(V / T) each);
  // the cross-entropy is computed over the split logits.
  const std::int64_t h = d.hidden, s = d.tokens(), r = d.rows(), v = d.vocab_rows();
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma] = {"ln.gamma", {h}, Init::ones};
  l.parameters[kBeta] = {"ln.beta", {h}, Init::zeros};
  l.parameters[kWu] = {"wu", {v, h}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {r, h}};
  l.kept[kNormed] = {"ln", {r, h}};
  l.kept[kStats] = {"ln.stats", {r, 2}};
  l.kept[kProbs] = {"probs", {s, v}};
  l.kept[kTargets] = {"targets", {s}, Element::index};
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed] = {"ln", {r, h}};
  l.weight_kept[weight_kept::kDLogits] = {"d_logits", {s, v}};
  return l;
}

LayerLayout token_embedding_layout(const LayerDims& d) {
  using namespace layout::token_embedding;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kTok] = {"tok", {d.vocab_rows(), d.hidden}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kIds] = {"ids", {d.tokens()}, Element::index};
  return l;
}

// The attention's kept tensor of a block, P or its log-sum-exp.
KeptLayout attention_scores(const LayerDims& d) {
  return {d.attention == Attention::flash ? "attention.lse" : "attention.probs", d.attention_kept()};
}

LayerLayout llama_block_layout(const LayerDims& d) {
  using namespace layout::llama_block;
  // Split as transformer_block's: Wqkv (query and kv heads, A / T and G / T)
  // and w1, w3 column-parallel, Wo and w2 row-parallel.
  const std::int64_t h = d.hidden, f = d.split(d.ffn_width), s = d.tokens(), r = d.rows();
  const std::int64_t qkv = d.split(d.qkv_width()), attn = d.split(h);
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kNorm1] = {"norm1.gamma", {h}, Init::ones};
  l.parameters[kWqkv] = {"wqkv", {qkv, h}, Init::normal};
  l.parameters[kWo] = {"wo", {h, attn}, Init::normal};
  l.parameters[kNorm2] = {"norm2.gamma", {h}, Init::ones};
  l.parameters[kW1] = {"w1", {f, h}, Init::normal};
  l.parameters[kW3] = {"w3", {f, h}, Init::normal};
  l.parameters[kW2] = {"w2", {h, f}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {r, h}};
  l.kept[kNormed1] = {"norm1", {r, h}};
  l.kept[kRstd1] = {"norm1.rstd", {r}};
  l.kept[kQkv] = {"qkv", {s, qkv}};
  l.kept[kScores] = attention_scores(d);
  l.kept[kAttn] = {"attention", {s, attn}};
  l.kept[kA] = {"a", {r, h}};
  l.kept[kNormed2] = {"norm2", {r, h}};
  l.kept[kRstd2] = {"norm2.rstd", {r}};
  l.kept[kGate] = {"gate", {s, f}};
  l.kept[kUp] = {"up", {s, f}};
  l.kept[kH] = {"swiglu", {s, f}};
  namespace w = weight_kept;
  l.weight_kept.resize(w::kCount);
  l.weight_kept[w::kNormed1] = {"norm1", {r, h}};
  l.weight_kept[w::kDQkv] = {"d_qkv", {s, qkv}};
  l.weight_kept[w::kAttn] = {"attention", {s, attn}};
  l.weight_kept[w::kDA] = {"d_a", {r, h}};
  l.weight_kept[w::kNormed2] = {"norm2", {r, h}};
  l.weight_kept[w::kDGate] = {"d_gate", {s, f}};
  l.weight_kept[w::kDUp] = {"d_up", {s, f}};
  l.weight_kept[w::kH] = {"swiglu", {s, f}};
  l.weight_kept[w::kDOut] = {"d_out", {r, h}};
  mark_recomputed(l, d.recompute, {kScores}, {kGate, kUp, kH}, {kNormed1, kRstd1, kNormed2, kRstd2});
  return l;
}

LayerLayout rms_head_layout(const LayerDims& d) {
  using namespace layout::rms_head;
  const std::int64_t h = d.hidden, s = d.tokens(), r = d.rows(), v = d.vocab_rows();
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma] = {"norm.gamma", {h}, Init::ones};
  l.parameters[kWu] = {"wu", {v, h}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {r, h}};
  l.kept[kNormed] = {"norm", {r, h}};
  l.kept[kRstd] = {"norm.rstd", {r}};
  l.kept[kProbs] = {"probs", {s, v}};
  l.kept[kTargets] = {"targets", {s}, Element::index};
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed] = {"norm", {r, h}};
  l.weight_kept[weight_kept::kDLogits] = {"d_logits", {s, v}};
  return l;
}

LayerLayout dit_embed_layout(const LayerDims& d) {
  using namespace layout::dit_embed;
  const std::int64_t h = d.hidden, t = d.seq;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kPatchW] = {"patch.w", {h, d.patch_in}, Init::normal};
  l.parameters[kPatchB] = {"patch.b", {h}, Init::zeros};
  l.parameters[kPos] = {"pos", {t, h}, Init::normal};
  l.parameters[kT1] = {"t.w1", {h, kTimestepFeatures}, Init::normal};
  l.parameters[kT1b] = {"t.b1", {h}, Init::zeros};
  l.parameters[kT2] = {"t.w2", {h, h}, Init::normal};
  l.parameters[kT2b] = {"t.b2", {h}, Init::zeros};
  l.parameters[kLabels] = {"labels", {d.classes + 1, h}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kInput] = {"input", {t * d.patch_in + 2}};
  l.kept[kFreq] = {"t.features", {kTimestepFeatures}};
  l.kept[kTPre] = {"t.pre_silu", {h}};
  l.kept[kTAct] = {"t.silu", {h}};
  return l;
}

LayerLayout dit_block_layout(const LayerDims& d) {
  using namespace layout::dit_block;
  const std::int64_t h = d.hidden, f = d.ffn_width, t = d.seq;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kAdaW] = {"ada.w", {6 * h, h}, Init::normal};
  l.parameters[kAdaB] = {"ada.b", {6 * h}, Init::zeros};
  l.parameters[kWqkv] = {"wqkv", {3 * h, h}, Init::normal};
  l.parameters[kBqkv] = {"bqkv", {3 * h}, Init::zeros};
  l.parameters[kWo] = {"wo", {h, h}, Init::normal};
  l.parameters[kBo] = {"bo", {h}, Init::zeros};
  l.parameters[kW1] = {"w1", {f, h}, Init::normal};
  l.parameters[kB1] = {"b1", {f}, Init::zeros};
  l.parameters[kW2] = {"w2", {h, f}, Init::normal};
  l.parameters[kB2] = {"b2", {h}, Init::zeros};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {t + 1, h}};
  l.kept[kSiluC] = {"silu_c", {h}};
  l.kept[kMod] = {"modulation", {6 * h}};
  l.kept[kStats1] = {"ln1.stats", {t, 2}};
  l.kept[kMod1] = {"ln1.modulated", {t, h}};
  l.kept[kQkv] = {"qkv", {t, 3 * h}};
  l.kept[kScores] = attention_scores(d);
  l.kept[kAttn] = {"attention", {t, h}};
  l.kept[kO] = {"attention.out", {t, h}};
  l.kept[kA] = {"a", {t, h}};
  l.kept[kStats2] = {"ln2.stats", {t, 2}};
  l.kept[kMod2] = {"ln2.modulated", {t, h}};
  l.kept[kPreGelu] = {"pre_gelu", {t, f}};
  l.kept[kGelu] = {"gelu", {t, f}};
  l.kept[kF] = {"mlp.out", {t, h}};
  namespace w = weight_kept;
  l.weight_kept.resize(w::kCount);
  l.weight_kept[w::kSiluC] = {"silu_c", {h}};
  l.weight_kept[w::kDMod] = {"d_modulation", {6 * h}};
  l.weight_kept[w::kMod1] = {"ln1.modulated", {t, h}};
  l.weight_kept[w::kDQkv] = {"d_qkv", {t, 3 * h}};
  l.weight_kept[w::kAttn] = {"attention", {t, h}};
  l.weight_kept[w::kDO] = {"d_attention.out", {t, h}};
  l.weight_kept[w::kMod2] = {"ln2.modulated", {t, h}};
  l.weight_kept[w::kDPreGelu] = {"d_pre_gelu", {t, f}};
  l.weight_kept[w::kGelu] = {"gelu", {t, f}};
  l.weight_kept[w::kDF] = {"d_mlp.out", {t, h}};
  return l;
}

LayerLayout dit_head_layout(const LayerDims& d) {
  using namespace layout::dit_head;
  const std::int64_t h = d.hidden, t = d.seq, o = d.patch_out;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kAdaW] = {"ada.w", {2 * h, h}, Init::normal};
  l.parameters[kAdaB] = {"ada.b", {2 * h}, Init::zeros};
  l.parameters[kW] = {"w", {o, h}, Init::normal};
  l.parameters[kB] = {"b", {o}, Init::zeros};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {t + 1, h}};
  l.kept[kSiluC] = {"silu_c", {h}};
  l.kept[kMod] = {"modulation", {2 * h}};
  l.kept[kStats] = {"ln.stats", {t, 2}};
  l.kept[kModulated] = {"ln.modulated", {t, h}};
  l.kept[kOut] = {"prediction", {t, o}};
  l.kept[kTarget] = {"target", {t, o}};
  namespace w = weight_kept;
  l.weight_kept.resize(w::kCount);
  l.weight_kept[w::kSiluC] = {"silu_c", {h}};
  l.weight_kept[w::kDMod] = {"d_modulation", {2 * h}};
  l.weight_kept[w::kModulated] = {"ln.modulated", {t, h}};
  l.weight_kept[w::kDOut] = {"d_prediction", {t, o}};
  return l;
}

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

std::int64_t elements_of(const std::vector<KeptLayout>& tensors, Element element) {
  std::int64_t n = 0;
  for (const KeptLayout& k : tensors) {
    if (k.element == element && !k.recomputed) n += product(k.shape);
  }
  return n;
}


std::vector<std::int64_t> shape_at(const KeptLayout& tensor, std::int64_t b) {
  std::vector<std::int64_t> shape{b};
  shape.insert(shape.end(), tensor.shape.begin(), tensor.shape.end());
  return shape;
}

}  // namespace

std::int64_t LayerLayout::parameter_count() const {
  std::int64_t n = 0;
  for (const ParameterLayout& p : parameters) n += product(p.shape);
  return n;
}

std::int64_t LayerLayout::kept_elements(Element element) const { return elements_of(kept, element); }

std::int64_t LayerLayout::weight_kept_elements(Element element) const {
  return elements_of(weight_kept, element);
}

std::vector<std::int64_t> LayerLayout::kept_shape(std::size_t i, std::int64_t b) const {
  return shape_at(kept.at(i), b);
}

std::vector<std::int64_t> LayerLayout::weight_kept_shape(std::size_t i, std::int64_t b) const {
  return shape_at(weight_kept.at(i), b);
}

LayerLayout layer_layout(std::string_view kind, const LayerDims& dims) {
  if (kind == layer_kind::mlp_block) return mlp_block_layout(dims);
  if (kind == layer_kind::mse_loss) return mse_loss_layout(dims);
  if (kind == layer_kind::embedding) return embedding_layout(dims);
  if (kind == layer_kind::transformer_block) return transformer_block_layout(dims);
  if (kind == layer_kind::lm_head) return lm_head_layout(dims);
  if (kind == layer_kind::token_embedding) return token_embedding_layout(dims);
  if (kind == layer_kind::llama_block) return llama_block_layout(dims);
  if (kind == layer_kind::rms_head) return rms_head_layout(dims);
  if (kind == layer_kind::dit_embed) return dit_embed_layout(dims);
  if (kind == layer_kind::dit_block) return dit_block_layout(dims);
  if (kind == layer_kind::dit_head) return dit_head_layout(dims);
  throw InputError(fmt::format("layer kind '{}': unknown", kind));
}

LayerLayout layer_layout(const Model& model, const Layer& layer) {
  return layer_layout(layer.kind, layer_dims(model, layer.ffn_width));
}

LayerDims layer_dims(const Model& model, std::int64_t ffn_width) {
  const std::int64_t patch_cells = static_cast<std::int64_t>(model.patch) * model.patch;
  return {.hidden = model.hidden,
          .ffn_width = ffn_width,
          .seq = model.seq,
          .heads = model.heads,
          .vocab = model.vocab,
          .kv_heads = model.kv_heads,
          .attention = model.attention,
          .patch_in = patch_cells * model.channels,
          .patch_out = patch_cells * 2 * model.channels,
          .classes = model.classes,
          .tensor_parallel = model.tensor_parallel,
          .sequence_parallel = model.sequence_parallel,
          .context_parallel = model.context_parallel,
          .recompute = model.recompute_modules,
          .dropout = model.dropout};
}

std::vector<std::int64_t> LayerDims::attention_kept() const {
  if (attention == Attention::flash) return {split(heads), tokens()};
  return {split(heads), tokens(), seq};
}

void count_from_layout(Layer& layer, const LayerLayout& layout) {
  layer.params = layout.parameter_count();
  layer.activation_elems = layout.kept_elements(Element::floating);
  layer.activation_fixed_bytes = 4 * layout.kept_elements(Element::index) +  // int32
                                 layout.kept_elements(Element::mask);         // 1 byte
  layer.weight_grad_stash_elems = layout.weight_kept_elements(Element::floating);
  layer.weight_grad_stash_fixed_bytes = 4 * layout.weight_kept_elements(Element::index);
}

}  // namespace gpipe::models
