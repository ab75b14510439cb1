#include "models/context_parallel.hpp"

#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/layer_layout.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"

namespace gpipe::models {

namespace {

void check_context(const Model& model, const ContextParallel& cp) {
  const int c = cp.degree;
  if (c < 1) throw InputError(fmt::format("--context-parallel {}: give 1 or more GPUs a sequence", c));
  if (model.context_parallel != 1) {
    throw InputError(fmt::format("{}: already split over {} GPUs' context", model.spec, model.context_parallel));
  }
  if (c == 1) return;
  if (model.family != "transformer" && model.family != "llama") {
    throw InputError(fmt::format("--context-parallel {}: context parallelism splits the transformer and llama "
                                 "families' sequences; {} has none",
                                 c, model.family));
  }
  if (model.attention != Attention::flash) {
    throw InputError(fmt::format("--context-parallel {}: {} has naive attention, whose S x S probabilities context "
                                 "parallelism does not split; use attn=flash",
                                 c, model.spec));
  }
  if (model.seq % (2 * c) != 0) {
    throw InputError(fmt::format("--context-parallel {}: 2C = {} does not divide the sequence of {} (its "
                                 "load-balanced chunks, two a GPU)",
                                 c, 2 * c, model.seq));
  }
  if (model.sequence_parallel && (model.seq / c) % model.tensor_parallel != 0) {
    throw InputError(fmt::format("--context-parallel {}: with sequence parallelism T = {} must divide a GPU's {} "
                                 "tokens",
                                 c, model.tensor_parallel, model.seq / c));
  }
}

bool attends(std::string_view kind) {
  return kind == layer_kind::transformer_block || kind == layer_kind::llama_block;
}

// The context group's collectives of a block, per sample (the header's table).
std::vector<LayerCollective> context_collectives(const LayerDims& d, ContextParallelForm form) {
  const std::int64_t kv = 2 * d.split(d.kv_groups()) * (d.hidden / d.heads);
  const std::int64_t all = d.seq * kv;
  using P = TensorParallelPass;
  using C = Collective;
  constexpr CollectiveGroup g = CollectiveGroup::context;
  if (form == ContextParallelForm::all_gather) {
    return {{P::forward, C::all_gather, all, g}, {P::input, C::all_gather, all, g},
            {P::input, C::reduce_scatter, all, g}};
  }
  return {{P::forward, C::all_gather, all, g, true}, {P::input, C::all_gather, all, g, true},
          {P::input, C::all_gather, all, g, true}};
}

}  // namespace

std::string_view to_string(ContextParallelForm form) {
  return form == ContextParallelForm::ring ? "ring" : "all-gather";
}

std::optional<ContextParallelForm> parse_context_parallel_form(std::string_view text) {
  if (text == "all-gather") return ContextParallelForm::all_gather;
  if (text == "ring") return ContextParallelForm::ring;
  return std::nullopt;
}

Model split_context_parallel(const Model& model, const ContextParallel& cp) {
  check_context(model, cp);
  if (cp.degree == 1) return model;
  Model out = model;
  out.context_parallel = cp.degree;
  out.context_form = cp.form;
  const auto c = static_cast<double>(cp.degree);
  for (Layer& layer : out.layers) {
    const LayerDims d = layer_dims(out, layer.ffn_width);
    count_from_layout(layer, layer_layout(out, layer));
    // Every FLOP of a block and of the head is per token (attention's too,
    // load balanced): / C. The embedding has none.
    layer.fwd_flops /= c;
    layer.bwd_input_flops /= c;
    layer.bwd_weight_flops /= c;
    const std::int64_t rows = d.rows() * d.hidden;
    if (layer.input_elems > 0) layer.input_elems = rows;
    if (layer.input_index_bytes > 0) layer.input_index_bytes = 4 * d.tokens();
    if (layer.target_index_bytes > 0) layer.target_index_bytes = 4 * d.tokens();
    if (layer.output_elems > 1) layer.output_elems = rows;
    layer.collectives = tensor_parallel_collectives(layer, d);
    if (attends(layer.kind)) {
      for (const LayerCollective& k : context_collectives(d, cp.form)) layer.collectives.push_back(k);
    }
  }
  return out;
}

Model unsplit_context(const Model& model) {
  return model.context_parallel == 1 ? model : parse_model(model.spec);
}

Model split_tensor_then_context(const Model& model, int tensor) {
  const Model tensor_split = split_tensor_parallel(unsplit_context(model), {.degree = tensor});
  return split_context_parallel(tensor_split, {.degree = model.context_parallel, .form = model.context_form});
}

std::vector<std::int64_t> context_positions(std::int64_t seq, int members, int member) {
  const std::int64_t chunk = seq / (2 * static_cast<std::int64_t>(members));
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(2 * chunk));
  for (const std::int64_t c : {static_cast<std::int64_t>(member), 2 * static_cast<std::int64_t>(members) - 1 - member}) {
    for (std::int64_t t = 0; t < chunk; ++t) out.push_back(c * chunk + t);
  }
  return out;
}

}  // namespace gpipe::models
