// Tensor parallelism inside a stage, Megatron-LM's split (Shoeybi et al.,
// arXiv 1909.08053; with sequence parallelism, Korthikanti et al., arXiv
// 2205.05198): each layer of the transformer and llama families split over
// the T GPUs of a group, one GPU's numbers, and the group's collectives.
//
// Per GPU (H hidden, S seq, F the FFN width, A heads, G kv heads, V vocab;
// T the degree, r = S, or S / T with sequence parallelism):
// - blocks: Wqkv (its heads, A / T and G / T) and the feed-forward's up
//   matrices (F / T rows) column-parallel, Wo and the down matrix row-parallel
//   (their biases whole); the LayerNorm/RMSNorm weights whole. Every FLOP of
//   a block is a matrix product over split heads or split F: FLOPs / T. It
//   keeps the tensors between a column- and a row-parallel Linear split (q k
//   v, the attention's scores, its output, the feed-forward's inner tensors),
//   and the residual stream and the norms' tensors [r, H]
//   (models/layer_layout.cpp has each tensor's shape).
// - the token table and the unembedding: vocabulary-parallel, ceil(V / T)
//   rows each (the last GPU's padded); the head's logits and their FLOPs
//   split alike; GPT-2's position table whole.
// - input and output [r, H]: what a stage sends is 1/T of the activation
//   with sequence parallelism, the whole of it otherwise.
//
// Collectives, per sample, on the compute stream (E = S x H elements):
//   block     without SP: forward 2 all-reduces of E (after Wo, after the
//               down matrix); input gradient 2 all-reduces of E (after the
//               column-parallel Linears' input gradients)
//             with SP: each all-reduce an all-gather and a reduce-scatter
//               of E (forward: gather before Wqkv and the up matrices,
//               scatter after Wo and down; input gradient: gather the
//               row-parallel Linears' output gradients, scatter the
//               column-parallel ones' input gradients); the weight gradient
//               gathers the two norms' outputs again (2 all-gathers of E),
//               and a split backward's W also the two output gradients it
//               keeps split (2 more), as Megatron-LM keeps them;
//             recompute=mlp adds the MLP forward's to the input gradient
//               (1 all-reduce of E, or with SP 1 all-gather and 1 reduce-scatter)
//   embedding without SP: forward 1 all-reduce of E (each GPU's rows, zeros
//               elsewhere); with SP: a reduce-scatter of E, and the backward
//               gathers the output gradient (1 all-gather of E) for the table
//   head      forward 3 all-reduces of S (the cross-entropy's max, sum of
//               exponentials and target logit over the split vocabulary);
//               input gradient 1 all-reduce of E; with SP a gather of the
//               norm's output before Wu (forward), a reduce-scatter instead
//               of the all-reduce, and a gather again for Wu's gradient
// Not priced: with SP, the norms' and the row-parallel biases' gradients
// (about 2H a block, once a step) are summed over the group before the step.
#pragma once

#include <vector>

#include "models/layer_layout.hpp"
#include "models/model.hpp"

namespace gpipe::models {

struct TensorParallel {
  int degree = 1;  // T
  bool sequence_parallel = false;
  bool operator==(const TensorParallel&) const = default;
};

// `model` split over a tensor-parallel group: its layers one GPU's, with
// their collectives (Layer::collectives), Model::tensor_parallel and
// sequence_parallel set. degree 1 without sequence parallelism gives `model`
// back. InputError, in one line naming the value, when the degree is < 1,
// the family is not transformer or llama (degree > 1), T does not divide the
// heads, the kv heads or the FFN width, sequence parallelism is asked with
// T = 1 or T does not divide the sequence, or `model` is split already (over
// its tensor- or its context-parallel group: split over T first).
[[nodiscard]] Model split_tensor_parallel(const Model& model, const TensorParallel& tp);

// The tensor-parallel group's collectives of `layer` with dimensions `d`
// (the header's table, over d.tokens(): S / C with context parallelism);
// none at T = 1.
[[nodiscard]] std::vector<LayerCollective> tensor_parallel_collectives(const Layer& layer, const LayerDims& d);

// The total elements per sample of a layer's collectives of one kind in one
// pass (tests, reports).
[[nodiscard]] std::int64_t collective_elems(const Layer& layer, TensorParallelPass pass, Collective collective);

}  // namespace gpipe::models
