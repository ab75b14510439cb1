#include "models/tensor_parallel.hpp"

#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

namespace {

using P = TensorParallelPass;
using C = Collective;

void check(const Model& model, const TensorParallel& tp) {
  const int t = tp.degree;
  if (t < 1) throw InputError(fmt::format("--tensor-parallel {}: give 1 or more GPUs a stage", t));
  if (model.tensor_parallel != 1 || model.sequence_parallel) {
    throw InputError(fmt::format("{}: already split over {} GPUs", model.spec, model.tensor_parallel));
  }
  if (model.context_parallel != 1) {
    throw InputError(fmt::format("{}: split over its context-parallel group already; split over the "
                                 "tensor-parallel group first",
                                 model.spec));
  }
  if (tp.sequence_parallel && t == 1) {
    throw InputError("--sequence-parallel splits over the tensor-parallel group: give --tensor-parallel 2 or more");
  }
  if (t == 1) return;
  if (model.family != "transformer" && model.family != "llama") {
    throw InputError(fmt::format("--tensor-parallel {}: tensor parallelism splits the transformer and llama "
                                 "families' blocks; {} has none",
                                 t, model.family));
  }
  if (model.heads % t != 0) {
    throw InputError(fmt::format("--tensor-parallel {} does not divide the {} attention heads", t, model.heads));
  }
  if (model.kv_heads % t != 0) {
    throw InputError(fmt::format("--tensor-parallel {} does not divide the {} key/value heads", t, model.kv_heads));
  }
  for (const Layer& layer : model.layers) {
    if (layer.ffn_width % t != 0) {
      throw InputError(fmt::format("--tensor-parallel {} does not divide {}'s feed-forward width {}", t,
                                   layer.name, layer.ffn_width));
    }
  }
  if (tp.sequence_parallel && model.seq % t != 0) {
    throw InputError(
        fmt::format("--sequence-parallel: --tensor-parallel {} does not divide the sequence of {}", t, model.seq));
  }
}

bool is_block(std::string_view kind) {
  return kind == layer_kind::transformer_block || kind == layer_kind::llama_block;
}
bool is_embedding(std::string_view kind) {
  return kind == layer_kind::embedding || kind == layer_kind::token_embedding;
}

}  // namespace

std::vector<LayerCollective> tensor_parallel_collectives(const Layer& layer, const LayerDims& d) {
  if (d.tensor_parallel == 1) return {};
  const std::int64_t e = d.tokens() * d.hidden;
  const bool sp = d.sequence_parallel;
  std::vector<LayerCollective> out;
  const auto add = [&out](P pass, C collective, std::int64_t elems, int times = 1) {
    for (int i = 0; i < times; ++i) out.push_back({pass, collective, elems});
  };
  if (is_block(layer.kind)) {
    if (!sp) {
      add(P::forward, C::all_reduce, e, 2);
      add(P::input, C::all_reduce, e, 2);
    } else {
      add(P::forward, C::all_gather, e, 2);
      add(P::forward, C::reduce_scatter, e, 2);
      add(P::input, C::all_gather, e, 2);
      add(P::input, C::reduce_scatter, e, 2);
      add(P::weight, C::all_gather, e, 2);
      add(P::split_weight, C::all_gather, e, 2);
    }
    // recompute=mlp runs the MLP's forward again in the backward, its
    // gather before the up matrices and its reduction after the down one.
    if (d.recompute.mlp) {
      if (!sp) {
        add(P::input, C::all_reduce, e);
      } else {
        add(P::input, C::all_gather, e);
        add(P::input, C::reduce_scatter, e);
      }
    }
  } else if (is_embedding(layer.kind)) {
    if (!sp) {
      add(P::forward, C::all_reduce, e);
    } else {
      add(P::forward, C::reduce_scatter, e);
      add(P::input, C::all_gather, e);
    }
  } else {  // the head
    if (sp) add(P::forward, C::all_gather, e);
    add(P::forward, C::all_reduce, d.tokens(), 3);
    if (!sp) {
      add(P::input, C::all_reduce, e);
    } else {
      add(P::input, C::reduce_scatter, e);
      add(P::weight, C::all_gather, e);
    }
  }
  return out;
}

Model split_tensor_parallel(const Model& model, const TensorParallel& tp) {
  check(model, tp);
  if (tp.degree == 1) return model;
  Model out = model;
  out.tensor_parallel = tp.degree;
  out.sequence_parallel = tp.sequence_parallel;
  const auto t = static_cast<double>(tp.degree);
  for (Layer& layer : out.layers) {
    const LayerDims d = layer_dims(out, layer.ffn_width);
    count_from_layout(layer, layer_layout(out, layer));
    const std::int64_t rows = d.rows() * d.hidden;
    if (is_block(layer.kind)) {
      layer.fwd_flops /= t;
      layer.bwd_input_flops /= t;
      layer.bwd_weight_flops /= t;
      layer.input_elems = rows;
      layer.output_elems = rows;
    } else if (is_embedding(layer.kind)) {
      layer.output_elems = rows;
    } else {  // the head: its logits split over the vocabulary
      const double share = static_cast<double>(d.vocab_rows()) / static_cast<double>(d.vocab);
      layer.fwd_flops *= share;
      layer.bwd_input_flops *= share;
      layer.bwd_weight_flops *= share;
      layer.input_elems = rows;
    }
    if (layer.tied_elems > 0) layer.tied_elems = d.vocab_rows() * d.hidden;
    layer.collectives = tensor_parallel_collectives(layer, d);
  }
  return out;
}

std::int64_t collective_elems(const Layer& layer, TensorParallelPass pass, Collective collective) {
  std::int64_t total = 0;
  for (const LayerCollective& c : layer.collectives) {
    if (c.pass == pass && c.collective == collective) total += c.elems;
  }
  return total;
}

}  // namespace gpipe::models
