#include "models/layer_layout.hpp"

#include <fmt/format.h>

#include "models/model.hpp"
#include "schedules/error.hpp"

namespace gpipe::models {

namespace {

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
  l.parameters[kTok] = {"tok", {d.vocab, d.hidden}, Init::normal};
  l.parameters[kPos] = {"pos", {d.seq, d.hidden}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kIds] = {"ids", {d.seq}, Element::index};
  return l;
}

LayerLayout transformer_block_layout(const LayerDims& d) {
  using namespace layout::transformer_block;
  const std::int64_t h = d.hidden, f = d.ffn_width, s = d.seq, a = d.heads;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma1] = {"ln1.gamma", {h}, Init::ones};
  l.parameters[kBeta1] = {"ln1.beta", {h}, Init::zeros};
  l.parameters[kWqkv] = {"wqkv", {3 * h, h}, Init::normal};
  l.parameters[kBqkv] = {"bqkv", {3 * h}, Init::zeros};
  l.parameters[kWo] = {"wo", {h, h}, Init::normal};
  l.parameters[kBo] = {"bo", {h}, Init::zeros};
  l.parameters[kGamma2] = {"ln2.gamma", {h}, Init::ones};
  l.parameters[kBeta2] = {"ln2.beta", {h}, Init::zeros};
  l.parameters[kW1] = {"w1", {f, h}, Init::normal};
  l.parameters[kB1] = {"b1", {f}, Init::zeros};
  l.parameters[kW2] = {"w2", {h, f}, Init::normal};
  l.parameters[kB2] = {"b2", {h}, Init::zeros};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {s, h}};
  l.kept[kNormed1] = {"ln1", {s, h}};
  l.kept[kQkv] = {"qkv", {s, 3 * h}};
  l.kept[kProbs] = {"attention.probs", {a, s, s}};
  l.kept[kAttn] = {"attention", {s, h}};
  l.kept[kA] = {"a", {s, h}};
  l.kept[kNormed2] = {"ln2", {s, h}};
  l.kept[kPreGelu] = {"pre_gelu", {s, f}};
  l.kept[kGelu] = {"gelu", {s, f}};
  l.kept[kStats1] = {"ln1.stats", {s, 2}};
  l.kept[kStats2] = {"ln2.stats", {s, 2}};
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed1] = {"ln1", {s, h}};
  l.weight_kept[weight_kept::kDQkv] = {"d_qkv", {s, 3 * h}};
  l.weight_kept[weight_kept::kAttn] = {"attention", {s, h}};
  l.weight_kept[weight_kept::kDA] = {"d_a", {s, h}};
  l.weight_kept[weight_kept::kNormed2] = {"ln2", {s, h}};
  l.weight_kept[weight_kept::kDPreGelu] = {"d_pre_gelu", {s, f}};
  l.weight_kept[weight_kept::kGelu] = {"gelu", {s, f}};
  l.weight_kept[weight_kept::kDOut] = {"d_out", {s, h}};
  return l;
}

LayerLayout lm_head_layout(const LayerDims& d) {
  using namespace layout::lm_head;
  const std::int64_t h = d.hidden, s = d.seq, v = d.vocab;
  LayerLayout l;
  l.parameters.resize(kParamCount);
  l.parameters[kGamma] = {"ln.gamma", {h}, Init::ones};
  l.parameters[kBeta] = {"ln.beta", {h}, Init::zeros};
  l.parameters[kWu] = {"wu", {v, h}, Init::normal};
  l.kept.resize(kKeptCount);
  l.kept[kX] = {"x", {s, h}};
  l.kept[kNormed] = {"ln", {s, h}};
  l.kept[kStats] = {"ln.stats", {s, 2}};
  l.kept[kProbs] = {"probs", {s, v}};
  l.kept[kTargets] = {"targets", {s}, Element::index};
  l.weight_kept.resize(weight_kept::kCount);
  l.weight_kept[weight_kept::kNormed] = {"ln", {s, h}};
  l.weight_kept[weight_kept::kDLogits] = {"d_logits", {s, v}};
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
    if (k.element == element) n += product(k.shape);
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
  throw InputError(fmt::format("layer kind '{}': unknown", kind));
}

LayerLayout layer_layout(const Model& model, const Layer& layer) {
  return layer_layout(layer.kind, {.hidden = model.hidden,
                                   .ffn_width = layer.ffn_width,
                                   .seq = model.seq,
                                   .heads = model.heads,
                                   .vocab = model.vocab});
}

void count_from_layout(Layer& layer, const LayerLayout& layout) {
  layer.params = layout.parameter_count();
  layer.activation_elems = layout.kept_elements(Element::floating);
  layer.activation_index_bytes = 4 * layout.kept_elements(Element::index);  // int32
  layer.weight_grad_stash_elems = layout.weight_kept_elements(Element::floating);
  layer.weight_grad_stash_index_bytes = 4 * layout.weight_kept_elements(Element::index);
}

}  // namespace gpipe::models
