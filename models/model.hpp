// Model descriptions: a model is an ordered list of layers, each with its
// parameter count, FLOPs and memory per sample. A layer is the unit the
// partitioner places on a stage and the unit the executor runs; the analytic
// profile and the simulator cost it from these numbers, and the executor's
// measured activation memory must equal bytes_at() EXACTLY, so this comment is
// the contract, per layer kind, of which tensors a layer keeps for its backward.
//
// Conventions, every kind:
// - Numbers are per SAMPLE (micro-batch size 1) and scale linearly with b.
// - FLOPs count matrix products only, 2*m*n*k each. Elementwise work (LayerNorm,
//   GELU, softmax, residual adds, bias adds and their gradients, losses, the
//   embedding gather/scatter) counts 0. The backward of a Linear is two GEMMs of
//   the forward's size: one for the input gradient, one for the weight gradient.
// - Floating tensors, LayerNorm mean/rstd and softmax probabilities included, are
//   held in the run's dtype (fp32: 4 bytes, bf16: 2). Integer tensors (token ids,
//   next-token targets) are int32, 4 bytes, and dropout's masks 1 byte an
//   element, whatever the dtype (the *_fixed_bytes fields).
// - input: what the layer reads from the previous layer (the first layer: from
//   the data). output: what it hands to the next layer (a loss layer: its
//   per-sample loss, 1 element). target: the training target a loss layer reads
//   from the (seeded, synthetic) data; it is not part of input_bytes, it never
//   travels between stages.
// - activation: what the layer keeps from its forward until its backward when
//   not recomputing, its input included (a loss layer: its target too).
// - weight-gradient stash (W keeps): of a backward split into I (input
//   gradient) and W (weight gradient), what I leaves for W: the inputs and
//   output gradients of the layer's Linears, never more than its activation.
//   A kind whose W would need more does its whole weight gradient in I and
//   keeps nothing. LayerNorm's gamma and beta gradients are always done in I.
// - No dropout, but in the transformer family's dropout=p (below); every
//   LayerNorm has eps 1e-5 and affine gamma/beta; GELU is the tanh
//   approximation (GPT-2's).
//
// Per kind (H hidden, F the MLP inner width, S seq, A heads, V vocab):
//
// mlp_block   y = x + W2 gelu(W1 LN(x) + c1) + c2,   W1 [F,H], W2 [H,F]
//   params      2H + (F*H + F) + (H*F + H)
//   FLOPs       fwd 4HF; bwd_input 4HF; bwd_weight 4HF
//   input H, output H
//   stash       x [H], LN output (W1's input) [H], LN mean and rstd [2],
//               pre-GELU [F], GELU output (W2's input) [F]  =  2H + 2F + 2
//   W keeps     LN output [H], d pre-GELU [F], GELU output [F], d y [H]
//               =  2H + 2F
//
// mse_loss    loss = mean_j (x_j - t_j)^2      (no parameters)
//   FLOPs 0; input H; target H (floating); output 1
//   stash       x [H], target t [H]  =  2H
//   W keeps     nothing (no parameters)
//
// embedding   h[s] = tok[id[s]] + pos[s],  tok [V,H], pos [S,H]
//   params      V*H + S*H
//   FLOPs 0; input: token ids int32 [S] (input_index_bytes 4S); output [S,H]
//   stash       token ids int32 [S] (activation_fixed_bytes 4S), no floating
//   W keeps     nothing: the weight gradient needs d h [S,H], more than the
//               ids, so I does it
//
// transformer_block  GPT-2, pre-LN, F = 4H, biases on every Linear:
//     a = x + Wo attn(LN1(x)),  y = a + W2 gelu(W1 LN2(a))
//     attn: per head (d = H/A) softmax(q k^T / sqrt(d) + causal mask) v
//   params      12H^2 + 13H  (LN1 2H, Wqkv 3H^2+3H, Wo H^2+H, LN2 2H,
//               W1 4H^2+4H, W2 4H^2+H)
//   FLOPs       fwd 24SH^2 + 4S^2H          (Linears 24SH^2; q k^T and P v
//                                           2S^2H each, the full S x S
//                                           products: the causal mask saves none)
//               bwd_input 24SH^2 + 8S^2H    (dq, dk, dP, dv: 2S^2H each)
//               bwd_weight 24SH^2
//   input SH, output SH
//   stash       x [S,H], LN1 output [S,H], q,k,v [S,3H], softmax
//               probabilities P [A,S,S], attention output (Wo's input) [S,H],
//               a [S,H], LN2 output [S,H], pre-GELU [S,4H], GELU output [S,4H],
//               LN1 and LN2 mean and rstd [S,2] each
//               = 16SH + 4S + AS^2
//   W keeps     LN1 output [S,H], d qkv [S,3H], attention output [S,H],
//               d a [S,H], LN2 output [S,H], d pre-GELU [S,4H], GELU output
//               [S,4H], d y [S,H]  =  16SH  (generally 8SH + 2SF)
//
// lm_head     logits = LN(x) Wu, Wu [V,H], no bias;
//             loss = mean_s cross_entropy(logits[s], target[s])
//   params      2H + V*H
//   FLOPs       fwd 2SHV; bwd_input 2SHV; bwd_weight 2SHV
//   input SH; target: next-token ids int32 [S] (target_index_bytes 4S); output 1
//   stash       x [S,H], LN output (Wu's input) [S,H], LN mean and rstd [S,2],
//               softmax probabilities [S,V]  =  2SH + 2S + SV floating,
//               targets int32 [S] (activation_fixed_bytes 4S)
//   W keeps     LN output [S,H], d logits [S,V] (in the probabilities'
//               storage)  =  SH + SV
//
// dropout=p (transformer family, GPT-2's and Megatron-LM's sites, p the
//   probability of dropping; inverted dropout, the kept values scaled by
//   1/(1-p)): the embedding's output, the attention probabilities (naive:
//   before P v), and the outputs of Wo and W2 before each residual add. Each
//   keeps its mask, 1 byte an element (activation_fixed_bytes): the
//   embedding [S,H], a block its two hidden masks [S,H] each and, with naive
//   attention, the probabilities' mask [A,S,S] and the dropped probabilities
//   [A,S,S] (dtype), so a block keeps Korthikanti et al.'s 34SH + 5AS^2 bytes
//   in 16-bit: 16SH + 4S + 2AS^2 floating, 2SH + AS^2 mask bytes. attn=flash
//   keeps no attention mask (its kernel draws it again in the backward).
//   FLOPs do not change.
//
// recompute=core_attn+mlp+layernorm (transformer_block, llama_block): the block
//   keeps less and its bwd_input FLOPs grow, models/recompute_modules.hpp says
//   by what.
//
// attn=flash (transformer_block, llama_block, dit_block): the block keeps the
//   attention's log-sum-exp per query row and head [A,S] in P's place, and its
//   FLOPs count the products a flash kernel computes (models/attention_cost.hpp).
//
// The llama family (G kv heads, d = H/A, qkv = (A+2G)d; no biases; RMSNorm eps 1e-5):
// token_embedding  h[s] = tok[id[s]], tok [V,H]; params VH; FLOPs 0; keeps the
//   ids int32 [S]; W keeps nothing.
// llama_block  a = x + Wo attn(rope(Wqkv RMS1(x))), y = a + W2 (silu(W1 n2) * W3 n2), n2 = RMS2(a)
//   params      2H + qkv H + H^2 + 3HF
//   FLOPs       fwd 2SH(qkv + H + 3F) + attention; bwd_input the same + attention's
//               backward; bwd_weight 2SH(qkv + H + 3F)
//   stash       x, norm1 out, attention out, a, norm2 out [S,H] each, q k v after
//               rope [S,qkv], gate, up, silu(gate) up [S,F] each, two rstd [S], P
//               [A,S,S] or lse [A,S]  =  5SH + S qkv + 3SF + 2S + (AS^2 | AS)
//   W keeps     norm1 out, d qkv, attention out, d a, norm2 out, d gate, d up,
//               silu(gate) up, d y  =  5SH + S qkv + 3SF
// rms_head  as lm_head with RMSNorm (gamma only): params H + VH; stash x, norm
//   out [S,H], rstd [S], probabilities [S,V], targets int32 [S].
//
// The dit family (T tokens, P patch, C channels, N classes, F = 4H; LayerNorms
// without affine; activations [T+1, H]: the tokens, then the conditioning c):
// dit_embed  tokens = patches Wp + bp + pos, c = MLP(timestep features) + labels[y]
//   params      P^2 C H + H + TH + (256H + H) + (H^2 + H) + (N+1)H
//   input       T P^2 C + 2 floats (patches, timestep, label); no input gradient
//   FLOPs       fwd 2T P^2C H + 2*256H + 2H^2; bwd_input the same + 2H^2 (I does
//               every weight gradient); bwd_weight 0
//   stash       the input, the 256 timestep features, the MLP's pre-SiLU and SiLU [H]
// dit_block  adaLN-Zero (docs/models.md has the formulas in full):
//   params      18H^2 + 15H
//   FLOPs       fwd 2TH(3H + H + 2F) + 12H^2 + attention (not causal); bwd_input
//               the same + attention's backward; bwd_weight 2TH(3H + H + 2F) + 12H^2
//   stash       x with c [T+1,H], SiLU(c) [H], the six modulation vectors [6H], per
//               token the modulated LN1 and LN2 outputs, q k v, attention out, Wo's
//               out, a, W2's out (10TH), pre-GELU and GELU [T,F] each, two LN
//               (mean, rstd) [T,2] each, P [A,T,T] or lse [A,T]
//   W keeps     SiLU(c), d modulation (7H), modulated LN1 out, d qkv, attention
//               out, d o, modulated LN2 out, d f (8TH), d pre-GELU, GELU (2TF)
// dit_head  prediction = W (LN(x)(1 + scale) + shift) + b, (shift, scale) from
//   SiLU(c); loss = mean (prediction - target)^2 over T x P^2 2C
//   params      2H^2 + 2H + 2P^2C H + 2P^2C
//   stash       x with c, SiLU(c), shift and scale (2H), LN (mean, rstd) [T,2], the
//               modulated output [T,H], prediction and target [T, P^2 2C] each
//   W keeps     SiLU(c), d shift and scale, the modulated output, d prediction
//
// The mini-batch loss is the mean of the per-sample losses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/collective.hpp"
#include "models/recompute_modules.hpp"

namespace gpipe::models {

// fp8: the GEMMs in fp8 at the device's fp8 rate (Transformer Engine's
// recipe), every stored tensor as under bf16: weights, gradients,
// activations and messages 2 bytes an element, with the fp32 master copy and
// optimizer state of mixed precision. (Transformer Engine may keep a GEMM's
// input as its fp8 cast instead, 1 byte; gpipe counts 2: an upper bound.)
// Only the analytic profile takes fp8; the executors run fp32 and bf16.
enum class DType { fp32, bf16, fp8 };

// Bytes of one stored element of a dtype named as a profile's "dtype" field
// names it: fp32 4, bf16 2, fp16 2 (a measured profile may carry it, though
// no run here makes one), fp8 2 (stored as bf16, above); throws InputError
// naming the dtype otherwise.
[[nodiscard]] int bytes_per_element(std::string_view dtype);
[[nodiscard]] int bytes_per_element(DType dtype);  // bytes_per_element(to_string(dtype))
[[nodiscard]] std::string_view to_string(DType dtype);
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view text);
// The names parse_dtype() accepts ("fp32, bf16, fp8"), for help texts and errors.
[[nodiscard]] std::string_view dtype_names();

// The kind names above; the profile JSON's "kind" field uses the same strings.
namespace layer_kind {
inline constexpr std::string_view mlp_block = "mlp_block";
inline constexpr std::string_view mse_loss = "mse_loss";
inline constexpr std::string_view embedding = "embedding";
inline constexpr std::string_view transformer_block = "transformer_block";
inline constexpr std::string_view lm_head = "lm_head";
// The llama family's (models/llama.cpp) and the dit family's (models/dit.cpp).
inline constexpr std::string_view token_embedding = "token_embedding";
inline constexpr std::string_view llama_block = "llama_block";
inline constexpr std::string_view rms_head = "rms_head";
inline constexpr std::string_view dit_embed = "dit_embed";
inline constexpr std::string_view dit_block = "dit_block";
inline constexpr std::string_view dit_head = "dit_head";
}  // namespace layer_kind

// How a block computes attention (the spec's attn=): naive keeps the softmax
// probabilities [A,S,S] for the backward; flash keeps one log-sum-exp per
// query row and head [A,S] and recomputes the probabilities in the backward.
enum class Attention : std::uint8_t { naive, flash };
[[nodiscard]] std::string_view to_string(Attention attention);

// How context parallelism shares keys and values (models/context_parallel.hpp):
// Llama 3's all-gather before attention, or the ring that passes them on.
enum class ContextParallelForm : std::uint8_t { all_gather, ring };

// When, in a layer's passes, a collective of its tensor-parallel group runs
// (models/tensor_parallel.hpp): on the compute stream, in the pass's time.
enum class TensorParallelPass : std::uint8_t {
  forward,       // F (and a recomputing R)
  input,         // the backward's input-gradient part: B, and I of a split one
  weight,        // the backward's weight-gradient part: B, and W of a split one
  split_weight,  // W alone: what a split backward's W gathers again that B still holds
};

// Which group a layer's collective runs over: its tensor-parallel group (T
// GPUs, inside a node), or its context-parallel group (C GPUs of the same
// stage, models/context_parallel.hpp).
enum class CollectiveGroup : std::uint8_t { tensor, context };

struct LayerCollective {
  TensorParallelPass pass = TensorParallelPass::forward;
  Collective collective = Collective::all_reduce;
  std::int64_t elems = 0;  // per sample, in nccl-tests' sizes (models/collective.hpp)
  CollectiveGroup group = CollectiveGroup::tensor;
  // On a stream of its own, hidden behind the pass's attention kernel up to
  // that kernel's time (context parallelism's ring); else on the compute
  // stream, in the pass's time.
  bool beside_attention = false;
  bool operator==(const LayerCollective&) const = default;
};

struct Layer {
  std::string name;  // "embed", "block0", ..., "head" (lm_head) / "loss" (mse_loss)
  std::string kind;  // one of models::layer_kind
  std::int64_t params = 0;
  std::int64_t ffn_width = 0;  // F of an mlp_block / transformer_block, else 0

  // Per sample; bwd = input + weight.
  double fwd_flops = 0;
  double bwd_input_flops = 0;
  double bwd_weight_flops = 0;

  // Per sample. *_elems are floating elements (dtype-sized), *_index_bytes
  // int32 bytes, *_fixed_bytes bytes whatever the dtype (int32 ids and
  // targets, 1-byte dropout masks).
  std::int64_t input_elems = 0;
  std::int64_t input_index_bytes = 0;
  std::int64_t target_elems = 0;
  std::int64_t target_index_bytes = 0;
  std::int64_t output_elems = 0;
  std::int64_t activation_elems = 0;  // input and target included
  std::int64_t activation_fixed_bytes = 0;
  std::int64_t weight_grad_stash_elems = 0;  // what a split backward's W keeps
  std::int64_t weight_grad_stash_fixed_bytes = 0;
  // What the layer keeps from one item of an inference stream to the next
  // (dit's attention cache: the previous chunk's keys and values); 0 for most.
  std::int64_t state_elems = 0;
  // A tied embedding (llama's tied=1): the parameter, by its place in the
  // layer's parameters (models/layer_layout.hpp), that is one matrix with a
  // parameter of another layer (the token table and the unembedding), and its
  // elements; -1 and 0 for every other layer. Each layer keeps its own copy;
  // the two gradients are summed before every optimizer step (Model::tied).
  int tied_param = -1;
  std::int64_t tied_elems = 0;
  // With tensor or context parallelism (Model::tensor_parallel,
  // context_parallel > 1), every number above is one GPU's of the layer's
  // groups, and these are the groups' collectives in each pass; empty otherwise.
  std::vector<LayerCollective> collectives;

  [[nodiscard]] double bwd_flops() const { return bwd_input_flops + bwd_weight_flops; }
  bool operator==(const Layer&) const = default;
};

struct LayerBytes {
  std::int64_t input_bytes = 0;       // b * (input_elems * e + input_index_bytes)
  std::int64_t output_bytes = 0;      // b * output_elems * e
  std::int64_t activation_bytes = 0;  // b * (activation_elems * e + activation_fixed_bytes)
  std::int64_t state_bytes = 0;       // b * state_elems * e: one stream of items of b samples
  bool operator==(const LayerBytes&) const = default;
};

// The layer's bytes at micro-batch size b (e = bytes_per_element(dtype)).
// Throws InputError when b < 1.
[[nodiscard]] LayerBytes bytes_at(const Layer& layer, int micro_batch_size, DType dtype);
// What a split backward's W keeps of the layer's activation at micro-batch
// size b: b * (weight_grad_stash_elems * e + weight_grad_stash_fixed_bytes),
// never more than bytes_at().activation_bytes. InputError when b < 1.
[[nodiscard]] std::int64_t weight_grad_stash_bytes_at(const Layer& layer, int micro_batch_size,
                                                      DType dtype);
[[nodiscard]] std::int64_t param_bytes(const Layer& layer, DType dtype);

struct Model {
  std::string spec;    // canonical SPEC: keys in fixed order, defaults left out
  std::string family;  // "mlp", "transformer", "unbalanced", "llama", "dit"
  std::vector<Layer> layers;
  // Shape, for the executor. num_blocks is the SPEC's `layers=` (blocks only).
  int num_blocks = 0;
  int hidden = 0;
  int heads = 0;     // transformer, llama, dit; else 0
  int kv_heads = 0;  // key/value heads G (llama's grouped-query attention; = heads otherwise), else 0
  int seq = 0;       // tokens per sample: transformer, llama, dit (its T); else 0
  int vocab = 0;     // transformer, llama; else 0
  Attention attention = Attention::naive;
  int rope_theta = 0;   // llama: the rotary embedding's base
  int patch = 0;        // dit: patch side P
  int channels = 0;     // dit: latent channels C (the output has 2C: noise and variance)
  int classes = 0;      // dit: class labels (the table has one more row, the unconditional label)
  bool attention_cache = false;  // dit's cache=1: blocks attend over the previous chunk too (inference)
  // llama's tied=1: the first layer's token table and the last layer's
  // unembedding are one matrix (Layer::tied_param), as in Llama 3.2 1B and 3B.
  bool tied = false;
  // Tensor parallelism (models/tensor_parallel.hpp): each layer split over
  // this many GPUs, its numbers one GPU's; with sequence_parallel the
  // LayerNorm and residual regions split over the sequence too.
  int tensor_parallel = 1;
  bool sequence_parallel = false;
  // Context parallelism (models/context_parallel.hpp): each sequence split
  // over this many GPUs, each layer's numbers one GPU's of them, the keys
  // and values gathered (all_gather) or passed around (ring) for attention.
  int context_parallel = 1;
  ContextParallelForm context_form = ContextParallelForm::all_gather;
  // The spec's recompute= (transformer, llama): the modules each block runs
  // again in its backward instead of keeping (models/recompute_modules.hpp).
  RecomputeModules recompute_modules;
  // The transformer family's dropout=p: the probability each dropout site
  // drops an element (0: none), above.
  double dropout = 0;

  // The model's parameters, a tied matrix counted once (one GPU's, with
  // tensor parallelism).
  [[nodiscard]] std::int64_t params() const;
  // Rows per sample of the activation between two blocks (what a stage sends):
  // seq, and for dit one more, the conditioning row c that travels with the
  // tokens; 0 for models without a sequence ([b, H] activations).
  [[nodiscard]] int activation_rows() const { return family == "dit" ? seq + 1 : seq; }
  bool operator==(const Model&) const = default;
};

}  // namespace gpipe::models
