// Context parallelism: each sequence's tokens split over the C GPUs of a
// context-parallel group, every layer computing its share of the tokens, and
// attention's keys and values shared over the group (Llama 3, arXiv
// 2407.21783 section 3.3.2; Megatron-LM's --context-parallel-size).
//
// Per GPU (S seq, C the degree; T the tensor-parallel degree applied first):
// - the tokens of a sequence it holds are S / C (LayerDims::tokens()): every
//   activation and message of the transformer and llama families is 1 / C of
//   the whole, and the block's and head's FLOPs are / C. The causal
//   attention's work is / C too: the sequence is cut in 2C chunks and GPU i
//   holds chunks i and 2C - 1 - i, so each sees as many keys (both sources'
//   load balancing), which gpipe assumes and does not model chunk by chunk.
// - the weights are whole on every GPU of the group; their gradients are
//   partial sums over the group's tokens, reduced with the data-parallel
//   replicas' (over D x C, and ZeRO shards over D x C, as Megatron-LM folds
//   the group into data parallelism).
// - attention needs every key and value of the sequence. Per block and
//   sample, with kv = 2 (G / T) d the width of the GPU's heads' keys and
//   values (G kv heads, d = H / A), nccl-tests' sizes:
//     all_gather (Llama 3's): forward an all-gather of the whole K and V,
//       S kv; backward the all-gather again and a reduce-scatter of their
//       gradients, S kv each; on the compute stream, exposed ("the exposed
//       all-gather latency is small ... due to GQA", Llama 3), and the
//       gathered K and V are the backward's temporaries, not kept.
//     ring (Megatron-LM's, after Liu et al.'s ring attention): C - 1 steps
//       each passing S / C kv, the bytes of an all-gather of S kv; forward
//       one such pass, backward two (the keys and values again, and their
//       gradients back); on a stream of their own, hidden behind the pass's
//       attention kernel up to its time (LayerCollective::beside_attention).
// - the embedding and the head have no collective of the group: each GPU's
//   tokens are its own (the loss's mean over the group's tokens is a sum the
//   data-parallel reduction does).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "models/model.hpp"

namespace gpipe::models {

struct ContextParallel {
  int degree = 1;  // C
  ContextParallelForm form = ContextParallelForm::all_gather;
  bool operator==(const ContextParallel&) const = default;
};

[[nodiscard]] std::string_view to_string(ContextParallelForm form);  // "all-gather", "ring"
[[nodiscard]] std::optional<ContextParallelForm> parse_context_parallel_form(std::string_view text);

// `model` (whole, or split over its tensor-parallel group first) split over a
// context-parallel group: its layers one GPU's, their collectives the tensor
// group's over the GPU's tokens and the context group's, Model::context_parallel
// and context_form set. Degree 1 gives `model` back. InputError, in one line
// naming the value, when the degree is < 1, the family is not transformer or
// llama, the attention is not flash (naive attention's S x S probabilities
// are not what context parallelism splits), 2C does not divide the sequence
// (its load-balanced chunks), T does not divide a GPU's tokens with sequence
// parallelism, or `model` is split over a context group already.
[[nodiscard]] Model split_context_parallel(const Model& model, const ContextParallel& cp);

// The whole model a split over a context-parallel group was made from
// (parsed again from its spec), and that model split over a tensor-parallel
// group of `tensor` first, then over the same context group: the order the
// splits need, for what holds a context-split model and must split its
// blocks' heads too. A model not split over a context group is returned
// split over the tensor group alone.
[[nodiscard]] Model unsplit_context(const Model& model);
[[nodiscard]] Model split_tensor_then_context(const Model& model, int tensor);

// The tokens of a sequence one GPU of its context-parallel group holds: S / C.
[[nodiscard]] inline int tokens_per_gpu(const Model& model) { return model.seq / model.context_parallel; }

// Which tokens of a sequence of `seq` member `member` of `members` holds,
// in order: chunk `member` of the 2C chunks, then chunk 2C - 1 - member
// (the load balancing above). Increasing.
[[nodiscard]] std::vector<std::int64_t> context_positions(std::int64_t seq, int members, int member);

}  // namespace gpipe::models
