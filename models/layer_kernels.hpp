// The kernels a layer's passes run on a GPU, for the analytic cost model
// (profiles/kernel_model.hpp prices each): its GEMMs with their shapes, the
// attention core, and the memory-bound kernels (norms, activations, residual
// adds, softmax, the embedding's gather) with the bytes they move. One GPU's
// of a tensor-parallel group, at micro-batch size b.
//
// The GEMMs' and the attention's FLOPs sum EXACTLY to the layer's
// (model.hpp: b * fwd_flops, b * bwd_input_flops, b * bwd_weight_flops), so the
// kernels are the same work as the FLOP counts, split the way a GPU runs it.
//
// Per kind (t = b S tokens in the parallel regions, n = b S or b S / T with
// sequence parallelism outside them, H hidden, F the FFN width, q the qkv
// width, all split over T as models/tensor_parallel.hpp splits them; a GEMM
// m x n x k is C[m,n] = A[m,k] B[k,n]):
//   transformer_block  forward: ln1, qkv (t, q, H), attention, proj (t, H, H/T),
//                      residual, ln2, fc1 (t, F, H), gelu, fc2 (t, H, F), residual;
//                      input: fc2 (t, F, H), gelu', fc1 (t, H, F), ln2', residual',
//                      proj (t, H/T, H), attention', qkv (t, H, q), ln1', residual';
//                      weight: each Linear's (out, in, t) and its bias's sum
//                      dropout= writes the masks in residual1 and residual2 (as
//                      Megatron-LM's fused bias-dropout-add) and adds dropout2'
//                      and dropout1' (the gradient masked) before fc2' and proj'
//                      recompute= (models/recompute_modules.hpp) adds, to the
//                      input gradient, each module's forward kernels again (named
//                      "fc1 again", ...) just before their backward
//   llama_block        the same with RMSNorms, rope on q and k, the SwiGLU's gate
//                      and up as one GEMM (t, 2F, H) as Megatron-LM fuses them,
//                      silu * up, and no biases
//   attention          naive: the scores q k^T and P v as batched GEMMs (b A/T
//                      heads of S x S x d and S x d x S), the masked softmax
//                      between them (read and write the scores), backward dP,
//                      dv, the softmax's backward (read P and dP, write dS), dq,
//                      dk; with dropout= attention_dropout after the softmax and
//                      attention_dropout' before its backward; flash: one fused
//                      kernel a pass (its dropout inside), its FLOPs
//                      models/attention_cost.hpp's
//   lm_head, rms_head  the norm, the logits (t, V/T, H), the cross-entropy (read
//                      and write the logits); input: (t, H, V/T), the norm's
//                      backward; weight: (V/T, H, t)
//   embedding          gather (read the ids' rows, write n x H, and dropout='s
//                      mask); backward, in its weight pass: the scatter-add of
//                      the output gradient (reading the mask)
//   mlp_block          ln, W1 (b, F, H), gelu, W2 (b, H, F), residual, and their
//                      backward as the transformer's MLP half
//   mse_loss           one memory kernel a pass
//   dit_embed, dit_block, dit_head: no decomposition yet; one `roofline` kernel
//                      a pass holding its FLOPs and bytes (profiles/analytic.hpp's
//                      roofline), priced at the GEMM model's best efficiency
// A memory-bound kernel's bytes count each tensor it reads and writes once, in
// the run's dtype, and dropout masks at 1 byte an element (norm statistics and
// the softmax's row maxima are left out: 1/H of the rest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model.hpp"

namespace gpipe::models {

enum class KernelPass : std::uint8_t { forward, input, weight };
enum class KernelKind : std::uint8_t {
  gemm,       // batch x (m x n x k): 2 m n k FLOPs each
  attention,  // a fused attention kernel: `flops`, heads `batch`, m queries, n keys, k head dim
  memory,     // memory-bound: `bytes` read and written
  roofline,   // a whole pass of a kind without a decomposition: `flops` and `bytes`
};

struct Kernel {
  std::string name;  // "qkv", "attention", "ln1", ...: what it computes
  KernelPass pass = KernelPass::forward;
  KernelKind kind = KernelKind::memory;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  double flops = 0;  // gemm: 2 m n k batch; attention, roofline: as given
  double bytes = 0;  // memory, roofline: bytes moved; gemm: its operands, read and written once
  bool operator==(const Kernel&) const = default;
};

// The kernels of `layer` (a layer of `model`) at micro-batch size b in
// `dtype`, in the order each pass runs them. InputError when b < 1.
[[nodiscard]] std::vector<Kernel> layer_kernels(const Model& model, const Layer& layer, int micro_batch_size,
                                                DType dtype);

// The FLOPs of the kernels of one pass (tests, reports).
[[nodiscard]] double kernel_flops(const std::vector<Kernel>& kernels, KernelPass pass);

}  // namespace gpipe::models
