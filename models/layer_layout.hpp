// What each layer kind holds, written down once: its parameters (name,
// shape, initial value), what its forward keeps for the backward (shape at
// micro-batch size b, floating or integer) and, of a backward split into
// input gradient (I) and weight gradient (W), what I leaves for W, in the
// order the layers of every backend hold them (the enums below). The model's parameter and
// activation counts (model.hpp) are sums over it, and the CPU and CUDA
// layers make and check their tensors from it, so a layer keeps exactly what
// the simulator counts. model.hpp says what each kind computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.hpp"

namespace gpipe::models {

// GPT-2's initialisation: normal(0, 0.02) weights, zero biases, LayerNorm gamma 1 and beta 0.
enum class Init : std::uint8_t { normal, zeros, ones };
// A tensor of the run's dtype, of int32 (token ids, next-token targets), or
// of bytes (dropout's masks: 1 where the element is kept).
enum class Element : std::uint8_t { floating, index, mask };

struct ParameterLayout {
  std::string name;  // "w1", "ln1.gamma", ...: the same in every backend
  std::vector<std::int64_t> shape;
  Init init = Init::normal;
};

struct KeptLayout {
  std::string name;
  std::vector<std::int64_t> shape;  // per sample: the micro-batch dimension comes first, at b
  Element element = Element::floating;
  // Of a module the block recomputes (models/recompute_modules.hpp): made in
  // the forward, dropped at its end, made again in the backward; not kept.
  bool recomputed = false;
};

struct LayerLayout {
  std::vector<ParameterLayout> parameters;
  std::vector<KeptLayout> kept;  // the stash; the layer's input is always first
  // What a split backward keeps from the end of I to the end of W: the
  // inputs and output gradients of the layer's Linears. Never more bytes than
  // `kept` (a kind whose W would need more does its whole weight gradient in I
  // and keeps nothing), so a rank's memory only falls during I.
  std::vector<KeptLayout> weight_kept;

  [[nodiscard]] std::int64_t parameter_count() const;
  // Elements of `element` kind the stash holds per sample (its recomputed
  // tensors left out).
  [[nodiscard]] std::int64_t kept_elements(Element element) const;
  // Elements of `element` kind the weight-gradient stash holds per sample.
  [[nodiscard]] std::int64_t weight_kept_elements(Element element) const;
  // The shape of kept tensor `i` at micro-batch size b: {b, ...}.
  [[nodiscard]] std::vector<std::int64_t> kept_shape(std::size_t i, std::int64_t b) const;
  // The shape of weight-gradient stash tensor `i` at micro-batch size b: {b, ...}.
  [[nodiscard]] std::vector<std::int64_t> weight_kept_shape(std::size_t i, std::int64_t b) const;
};

// What a kind's layout depends on (0 where a kind has no such dimension).
struct LayerDims {
  std::int64_t hidden = 0;     // H
  std::int64_t ffn_width = 0;  // F of an mlp_block, transformer_block, llama_block or dit_block
  std::int64_t seq = 0;        // S (dit: T, the tokens)
  std::int64_t heads = 0;      // A
  std::int64_t vocab = 0;      // V
  std::int64_t kv_heads = 0;   // G (llama_block); 0: = A
  Attention attention = Attention::naive;  // what a block keeps of its attention
  std::int64_t patch_in = 0;   // dit: P*P*C, one patch's latent values
  std::int64_t patch_out = 0;  // dit: P*P*2C, one token's prediction (noise and variance)
  std::int64_t classes = 0;    // dit: N (its label table has N+1 rows)
  // Tensor parallelism (models/tensor_parallel.hpp): the layout of one GPU of
  // a group of T, Megatron-LM's split. 1: the whole layer.
  std::int64_t tensor_parallel = 1;
  bool sequence_parallel = false;
  // Context parallelism (models/context_parallel.hpp): this GPU holds S / C
  // of each sequence's tokens (queries), and attends over all S keys.
  std::int64_t context_parallel = 1;
  RecomputeModules recompute;  // the modules a block recomputes (Model::recompute_modules)
  double dropout = 0;          // Model::dropout: > 0 adds the masks' slots (namespace layout)

  // A block's query heads' width: H (d = H/A).
  [[nodiscard]] std::int64_t kv_groups() const { return kv_heads > 0 ? kv_heads : heads; }
  // One token's packed q, k, v row: (A + 2G) d.
  [[nodiscard]] std::int64_t qkv_width() const { return (heads + 2 * kv_groups()) * (hidden / heads); }
  // n split over the tensor-parallel group: n / T (the model's checks make it exact).
  [[nodiscard]] std::int64_t split(std::int64_t n) const { return n / tensor_parallel; }
  // The tokens of a sequence this GPU computes: S, or S / C with context parallelism.
  [[nodiscard]] std::int64_t tokens() const { return seq / context_parallel; }
  // The tokens a GPU holds outside the parallel regions (the residual
  // stream, the norms): tokens(), or tokens() / T with sequence parallelism.
  [[nodiscard]] std::int64_t rows() const { return sequence_parallel ? tokens() / tensor_parallel : tokens(); }
  // A vocabulary-parallel table's rows per GPU: ceil(V / T), the last GPU's padded.
  [[nodiscard]] std::int64_t vocab_rows() const { return (vocab + tensor_parallel - 1) / tensor_parallel; }
  // The shape, per sample, of what a block's attention keeps: P [A,S,S]
  // (naive) or its log-sum-exp per query row [A,S] (flash); A / T heads
  // with tensor parallelism, S / C queries with context parallelism.
  [[nodiscard]] std::vector<std::int64_t> attention_kept() const;
};

// DiT's sinusoidal timestep features (facebookresearch/DiT, TimestepEmbedder).
inline constexpr std::int64_t kTimestepFeatures = 256;

// The layout of a kind (one of models::layer_kind); InputError for another name.
[[nodiscard]] LayerLayout layer_layout(std::string_view kind, const LayerDims& dims);
// The dimensions of `model`'s layers, with a block's FFN width `ffn_width`.
[[nodiscard]] LayerDims layer_dims(const Model& model, std::int64_t ffn_width = 0);
// The layout of `layer`, a layer of `model`.
[[nodiscard]] LayerLayout layer_layout(const Model& model, const Layer& layer);

// Sets `layer`'s parameter count, what its stash holds per sample
// (activation_elems, activation_fixed_bytes: int32 4 bytes, masks 1) and what
// a split backward's W keeps (weight_grad_stash_elems,
// weight_grad_stash_fixed_bytes) from `layout`.
void count_from_layout(Layer& layer, const LayerLayout& layout);

// Positions in LayerLayout::parameters (and a layer's parameters()), in
// LayerLayout::kept (and a layer's stash) and in LayerLayout::weight_kept (and
// the stash a layer's I leaves for its W: namespace weight_kept), per kind.
namespace layout {

namespace mlp_block {
enum Param : std::size_t { kGamma, kBeta, kW1, kC1, kW2, kC2, kParamCount };
// x, LN output, LN (mean, rstd), pre-GELU, GELU output.
enum Kept : std::size_t { kX, kNormed, kStats, kPreGelu, kGelu, kKeptCount };
// W1's input and output gradient, W2's input and output gradient (the
// block's); LayerNorm's gamma and beta are done in I.
namespace weight_kept {
enum Kept : std::size_t { kNormed, kDPreGelu, kGelu, kDOut, kCount };
}  // namespace weight_kept
}  // namespace mlp_block

namespace mse_loss {
enum Kept : std::size_t { kX, kTarget, kKeptCount };
// No parameters: W keeps nothing.
}  // namespace mse_loss

namespace embedding {
enum Param : std::size_t { kTok, kPos, kParamCount };
enum Kept : std::size_t { kIds, kKeptCount };
// With dropout: its output's mask [S,H], after the ids.
enum Dropout : std::size_t { kMask = kKeptCount, kKeptWithDropout };
// Its weight gradient needs d(out) [S,H], more than the ids it stashes: I
// does it, W keeps nothing.
}  // namespace embedding

namespace transformer_block {
enum Param : std::size_t {
  kGamma1, kBeta1, kWqkv, kBqkv, kWo, kBo, kGamma2, kBeta2, kW1, kB1, kW2, kB2, kParamCount
};
// x, LN1 out, qkv, P (attn=flash: its log-sum-exp), attention out, a, LN2
// out, pre-GELU, GELU out, LN1 and LN2 (mean, rstd).
enum Kept : std::size_t {
  kX, kNormed1, kQkv, kProbs, kAttn, kA, kNormed2, kPreGelu, kGelu, kStats1, kStats2, kKeptCount
};
// With dropout, after those: the masks of Wo's and W2's outputs [S,H] (the
// sequence's rows: rows()), then, with naive attention, the probabilities'
// mask and the dropped probabilities (P v's input) [A,S,S]. Flash attention
// keeps neither: its kernel draws the mask again.
enum Dropout : std::size_t { kMaskA = kKeptCount, kMaskY, kProbsMask, kDroppedProbs, kKeptWithDropout };
// The input and output gradient of each Linear: Wqkv (LN1 out, d qkv), Wo
// (attention out, d a), W1 (LN2 out, d pre-GELU), W2 (GELU out, d y); the
// LayerNorms' gamma and beta are done in I.
namespace weight_kept {
enum Kept : std::size_t { kNormed1, kDQkv, kAttn, kDA, kNormed2, kDPreGelu, kGelu, kDOut, kCount };
}  // namespace weight_kept
}  // namespace transformer_block

namespace lm_head {
enum Param : std::size_t { kGamma, kBeta, kWu, kParamCount };
// x, LN output, LN (mean, rstd), softmax probabilities, targets.
enum Kept : std::size_t { kX, kNormed, kStats, kProbs, kTargets, kKeptCount };
// Wu's input and output gradient (LN out, d logits: the probabilities'
// storage, overwritten); LayerNorm's gamma and beta are done in I.
namespace weight_kept {
enum Kept : std::size_t { kNormed, kDLogits, kCount };
}  // namespace weight_kept
}  // namespace lm_head

namespace token_embedding {
enum Param : std::size_t { kTok, kParamCount };
enum Kept : std::size_t { kIds, kKeptCount };
// As embedding's: I does the weight gradient, W keeps nothing.
}  // namespace token_embedding

namespace llama_block {
// RMSNorm gammas, no biases; w1 the SwiGLU gate, w3 its up projection, w2 down.
enum Param : std::size_t { kNorm1, kWqkv, kWo, kNorm2, kW1, kW3, kW2, kParamCount };
// x, norm1 out, its rstd, qkv after the rotary embedding, P or its
// log-sum-exp, attention out, a, norm2 out, its rstd, gate, up, silu(gate) up.
enum Kept : std::size_t {
  kX, kNormed1, kRstd1, kQkv, kScores, kAttn, kA, kNormed2, kRstd2, kGate, kUp, kH, kKeptCount
};
// Each Linear's input and output gradient: Wqkv (norm1 out, d qkv before
// the rotary embedding), Wo (attention out, d a), w1 and w3 (norm2 out,
// d gate, d up), w2 (silu(gate) up, d y); the gammas are done in I.
namespace weight_kept {
enum Kept : std::size_t { kNormed1, kDQkv, kAttn, kDA, kNormed2, kDGate, kDUp, kH, kDOut, kCount };
}  // namespace weight_kept
}  // namespace llama_block

namespace rms_head {
enum Param : std::size_t { kGamma, kWu, kParamCount };
// x, norm out, its rstd, softmax probabilities, targets.
enum Kept : std::size_t { kX, kNormed, kRstd, kProbs, kTargets, kKeptCount };
namespace weight_kept {
enum Kept : std::size_t { kNormed, kDLogits, kCount };
}  // namespace weight_kept
}  // namespace rms_head

namespace dit_embed {
// Patch embedding (a P x P convolution of stride P: one Linear per patch),
// position table, timestep MLP (256 -> H -> H), label table (N+1 rows).
enum Param : std::size_t { kPatchW, kPatchB, kPos, kT1, kT1b, kT2, kT2b, kLabels, kParamCount };
// The input (patches, timestep, label), the timestep's sinusoidal features,
// the MLP's pre-SiLU and SiLU output. Its weight gradients need d tokens
// [T,H], more than it keeps: I does them, W keeps nothing.
enum Kept : std::size_t { kInput, kFreq, kTPre, kTAct, kKeptCount };
}  // namespace dit_embed

namespace dit_block {
enum Param : std::size_t { kAdaW, kAdaB, kWqkv, kBqkv, kWo, kBo, kW1, kB1, kW2, kB2, kParamCount };
// x (with the conditioning row c), SiLU(c), the six modulation vectors,
// LN1 (mean, rstd), modulated LN1 out, qkv, P or its log-sum-exp, attention
// out, Wo's out, a, LN2 (mean, rstd), modulated LN2 out, pre-GELU, GELU out,
// W2's out.
enum Kept : std::size_t {
  kX, kSiluC, kMod, kStats1, kMod1, kQkv, kScores, kAttn, kO, kA, kStats2, kMod2, kPreGelu, kGelu,
  kF, kKeptCount
};
// Each Linear's input and output gradient: adaLN (SiLU(c), d modulation),
// Wqkv (modulated LN1 out, d qkv), Wo (attention out, d o), W1 (modulated
// LN2 out, d pre-GELU), W2 (GELU out, d f).
namespace weight_kept {
enum Kept : std::size_t {
  kSiluC, kDMod, kMod1, kDQkv, kAttn, kDO, kMod2, kDPreGelu, kGelu, kDF, kCount
};
}  // namespace weight_kept
}  // namespace dit_block

namespace dit_head {
enum Param : std::size_t { kAdaW, kAdaB, kW, kB, kParamCount };
// x (with c), SiLU(c), shift and scale, LN (mean, rstd), modulated LN out,
// the prediction, the target.
enum Kept : std::size_t { kX, kSiluC, kMod, kStats, kModulated, kOut, kTarget, kKeptCount };
namespace weight_kept {
enum Kept : std::size_t { kSiluC, kDMod, kModulated, kDOut, kCount };
}  // namespace weight_kept
}  // namespace dit_head

}  // namespace layout

}  // namespace gpipe::models
