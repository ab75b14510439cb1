#include "models/layer_kernels.hpp"

#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/attention_cost.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

namespace {

using Pass = KernelPass;

// Appends kernels in the order a pass runs them; e is the dtype's bytes.
class Kernels {
 public:
  explicit Kernels(double e) : e_(e) {}

  void gemm(Pass pass, std::string name, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) {
    const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
    const double bd = static_cast<double>(batch);
    out_.push_back({.name = std::move(name), .pass = pass, .kind = KernelKind::gemm, .m = m, .n = n, .k = k,
                    .batch = batch, .flops = 2.0 * md * nd * kd * bd,
                    .bytes = (md * kd + kd * nd + md * nd) * bd * e_});
  }
  // A memory-bound kernel reading `read` and writing `written` elements,
  // and `masks` bytes of dropout masks besides (1 byte an element).
  void memory(Pass pass, std::string name, double read, double written, double masks = 0) {
    out_.push_back({.name = std::move(name), .pass = pass, .kind = KernelKind::memory,
                    .bytes = (read + written) * e_ + masks});
  }
  void attention(Pass pass, std::int64_t heads, std::int64_t queries, std::int64_t keys, std::int64_t head_dim,
                 double flops, double elems, std::string_view again = "") {
    out_.push_back({.name = fmt::format("attention{}", again), .pass = pass, .kind = KernelKind::attention, .m = queries, .n = keys,
                    .k = head_dim, .batch = heads, .flops = flops, .bytes = elems * e_});
  }
  void roofline(Pass pass, std::string name, double flops, double bytes) {
    out_.push_back({.name = std::move(name), .pass = pass, .kind = KernelKind::roofline, .flops = flops,
                    .bytes = bytes});
  }
  std::vector<Kernel> take() { return std::move(out_); }

 private:
  double e_;
  std::vector<Kernel> out_;
};

struct Shape {
  std::int64_t b = 1;
  LayerDims d;
  [[nodiscard]] std::int64_t tokens() const { return b * d.tokens(); }  // t: the parallel regions
  [[nodiscard]] std::int64_t norm_rows() const { return b * d.rows(); }  // n: the norms and residuals
  [[nodiscard]] std::int64_t heads() const { return d.split(d.heads); }
  [[nodiscard]] std::int64_t head_dim() const { return d.hidden / d.heads; }
};

// The attention between the qkv and output projections, its forward or its
// backward kernels, run in `pass` (recompute=core_attn runs the forward's in
// the input gradient's): naive's batched products and softmax, or flash's
// fused kernel (model.hpp's FLOPs, / T).
void attention(Kernels& k, Pass pass, const Shape& s, std::int64_t qkv_width, bool backward,
               std::string_view again = "") {
  const std::int64_t heads = s.b * s.heads();
  // This GPU's queries against every key (context parallelism: S / C of S).
  const std::int64_t queries = s.d.tokens();
  const std::int64_t seq = s.d.seq;
  const std::int64_t dh = s.head_dim();
  if (s.d.attention == Attention::naive) {
    const double scores = static_cast<double>(heads) * static_cast<double>(queries) * static_cast<double>(seq);
    // Dropout of the probabilities (Megatron-LM's own kernel after its fused
    // softmax): P in, the dropped P and its mask out; backward, the dropped
    // P's gradient and the mask in, P's gradient out.
    const bool dropout = s.d.dropout > 0;
    if (!backward) {
      k.gemm(pass, fmt::format("scores{}", again), queries, seq, dh, heads);
      k.memory(pass, fmt::format("softmax{}", again), scores, scores);
      if (dropout) k.memory(pass, fmt::format("attention_dropout{}", again), scores, scores, scores);
      k.gemm(pass, fmt::format("context{}", again), queries, dh, seq, heads);
    } else {
      k.gemm(pass, "d_probs", queries, seq, dh, heads);
      k.gemm(pass, "d_values", seq, dh, queries, heads);
      if (dropout) k.memory(pass, "attention_dropout'", scores, scores, scores);
      k.memory(pass, "softmax'", 2 * scores, scores);
      k.gemm(pass, "d_queries", queries, dh, seq, heads);
      k.gemm(pass, "d_keys", seq, dh, queries, heads);
    }
    return;
  }
  const AttentionFlops flops = attention_flops(seq, s.d.hidden, /*causal=*/true, Attention::flash);
  // Split over T by heads and over C by queries (the causal load balanced
  // across the group, as Megatron-LM's and Llama 3's chunks balance it).
  const double share = static_cast<double>(s.b) /
                       static_cast<double>(s.d.tensor_parallel * s.d.context_parallel);
  const double t = static_cast<double>(s.tokens());
  const double qkv = t * static_cast<double>(qkv_width);
  const double out = t * static_cast<double>(s.d.split(s.d.hidden));
  if (!backward) {
    k.attention(pass, heads, queries, seq, dh, flops.forward * share, qkv + out, again);
  } else {  // reads q k v, the output and its gradient; writes dq dk dv
    k.attention(pass, heads, queries, seq, dh, flops.backward * share, qkv + 2 * out + qkv);
  }
}

// GPT-2's block and llama's: the header's order.
std::vector<Kernel> block_kernels(const Shape& s, double e, bool llama) {
  Kernels k(e);
  const double t = static_cast<double>(s.tokens());
  const double n = static_cast<double>(s.norm_rows());
  const std::int64_t h = s.d.hidden;
  const std::int64_t h_split = s.d.split(h);
  const std::int64_t f = s.d.split(s.d.ffn_width);
  const std::int64_t q = llama ? s.d.split(s.d.qkv_width()) : s.d.split(3 * h);
  const std::int64_t up = llama ? 2 * f : f;  // the SwiGLU's gate and up in one GEMM
  const double hd = static_cast<double>(h);
  const double fd = static_cast<double>(f);
  const std::int64_t tokens = s.tokens();
  const char* norm = llama ? "rmsnorm" : "layernorm";
  // What rope turns (llama): the queries and keys, not the values.
  const double rotated = t * static_cast<double>(s.d.split((s.d.heads + s.d.kv_groups()) * s.head_dim()));

  // The forward's modules, each run in `pass` (the forward, or again in the
  // input gradient for recompute=, with " again" after its kernels' names).
  const auto norm_kernel = [&](Pass pass, int which, const char* again) {
    k.memory(pass, fmt::format("{}{}{}", norm, which, again), n * hd, n * hd);
  };
  const auto mlp = [&](Pass pass, const char* again) {
    k.gemm(pass, fmt::format("{}{}", llama ? "gate_up" : "fc1", again), tokens, up, h);
    if (llama) {
      k.memory(pass, fmt::format("silu_mul{}", again), 2 * t * fd, t * fd);
    } else {
      k.memory(pass, fmt::format("gelu{}", again), t * fd, t * fd);
    }
    k.gemm(pass, fmt::format("fc2{}", again), tokens, h, f);
  };
  const RecomputeModules& again = s.d.recompute;
  // Dropout of Wo's and W2's outputs (GPT-2's block): fused into the residual
  // add as Megatron-LM's bias-dropout-add, which writes the mask besides;
  // backward, the gradient masked (one kernel, reading the mask) before the
  // projection's backward. Flash attention drops inside its kernel.
  const double hidden_masks = s.d.dropout > 0 ? n * hd : 0;
  const auto dropout_backward = [&](int which) {
    if (hidden_masks > 0) k.memory(Pass::input, fmt::format("dropout{}'", which), n * hd, n * hd, hidden_masks);
  };

  // Forward.
  norm_kernel(Pass::forward, 1, "");
  k.gemm(Pass::forward, "qkv", tokens, q, h);
  if (llama) k.memory(Pass::forward, "rope", rotated, rotated);
  attention(k, Pass::forward, s, q, /*backward=*/false);
  k.gemm(Pass::forward, "proj", tokens, h, h_split);
  k.memory(Pass::forward, "residual1", 2 * n * hd, n * hd, hidden_masks);
  norm_kernel(Pass::forward, 2, "");
  mlp(Pass::forward, "");
  k.memory(Pass::forward, "residual2", 2 * n * hd, n * hd, hidden_masks);

  // Input gradient: the forward backwards, the residuals' gradients summed;
  // each recomputed module's forward again just before its backward.
  if (again.layernorm) norm_kernel(Pass::input, 2, " again");
  if (again.mlp) mlp(Pass::input, " again");
  dropout_backward(2);
  k.gemm(Pass::input, "fc2'", tokens, f, h);
  if (llama) {
    k.memory(Pass::input, "silu_mul'", 3 * t * fd, 2 * t * fd);
  } else {
    k.memory(Pass::input, "gelu'", 2 * t * fd, t * fd);
  }
  k.gemm(Pass::input, llama ? "gate_up'" : "fc1'", tokens, h, up);
  k.memory(Pass::input, fmt::format("{}2'", norm), 3 * n * hd, n * hd);
  k.memory(Pass::input, "residual2'", 2 * n * hd, n * hd);
  dropout_backward(1);
  k.gemm(Pass::input, "proj'", tokens, h_split, h);
  if (again.core_attn) attention(k, Pass::input, s, q, /*backward=*/false, " again");
  attention(k, Pass::input, s, q, /*backward=*/true);
  if (llama) k.memory(Pass::input, "rope'", rotated, rotated);
  k.gemm(Pass::input, "qkv'", tokens, h, q);
  if (again.layernorm) norm_kernel(Pass::input, 1, " again");
  k.memory(Pass::input, fmt::format("{}1'", norm), 3 * n * hd, n * hd);
  k.memory(Pass::input, "residual1'", 2 * n * hd, n * hd);

  // Weight gradient: each Linear's, and (GPT-2) each bias's sum over the tokens.
  k.gemm(Pass::weight, "qkv.w", q, h, tokens);
  k.gemm(Pass::weight, "proj.w", h, h_split, tokens);
  k.gemm(Pass::weight, llama ? "gate_up.w" : "fc1.w", up, h, tokens);
  k.gemm(Pass::weight, "fc2.w", h, f, tokens);
  if (!llama) k.memory(Pass::weight, "biases", t * static_cast<double>(q + h + f + h), 0);

  return k.take();
}

std::vector<Kernel> head_kernels(const Shape& s, double e, bool rms) {
  Kernels k(e);
  const double n = static_cast<double>(s.norm_rows());
  const double t = static_cast<double>(s.tokens());
  const std::int64_t h = s.d.hidden;
  const std::int64_t v = s.d.vocab_rows();
  const double hd = static_cast<double>(h);
  const double logits = t * static_cast<double>(v);
  const char* norm = rms ? "rmsnorm" : "layernorm";
  k.memory(Pass::forward, norm, n * hd, n * hd);
  k.gemm(Pass::forward, "logits", s.tokens(), v, h);
  k.memory(Pass::forward, "cross_entropy", logits, logits);
  k.gemm(Pass::input, "logits'", s.tokens(), h, v);
  k.memory(Pass::input, fmt::format("{}'", norm), 3 * n * hd, n * hd);
  k.gemm(Pass::weight, "logits.w", v, h, s.tokens());
  return k.take();
}

std::vector<Kernel> embedding_kernels(const Shape& s, double e) {
  Kernels k(e);
  const double n = static_cast<double>(s.norm_rows()) * static_cast<double>(s.d.hidden);
  // The forward reads one table row (and a position row, GPT-2) per token,
  // and with dropout writes its mask too (the output dropped in the same
  // kernel). The weight gradient reads the output gradient (and the mask)
  // and adds it into the rows.
  const double masks = s.d.dropout > 0 ? n : 0;
  k.memory(Pass::forward, "gather", n, n, masks);
  k.memory(Pass::weight, "scatter_add", 2 * n, n, masks);
  return k.take();
}

std::vector<Kernel> mlp_kernels(const Layer& layer, std::int64_t b, double e) {
  Kernels k(e);
  const std::int64_t h = layer.input_elems;
  const std::int64_t f = layer.ffn_width;
  const double rows = static_cast<double>(b);
  const double hd = static_cast<double>(h) * rows;
  const double fd = static_cast<double>(f) * rows;
  k.memory(Pass::forward, "layernorm", hd, hd);
  k.gemm(Pass::forward, "w1", b, f, h);
  k.memory(Pass::forward, "gelu", fd, fd);
  k.gemm(Pass::forward, "w2", b, h, f);
  k.memory(Pass::forward, "residual", 2 * hd, hd);
  k.gemm(Pass::input, "w2'", b, f, h);
  k.memory(Pass::input, "gelu'", 2 * fd, fd);
  k.gemm(Pass::input, "w1'", b, h, f);
  k.memory(Pass::input, "layernorm'", 3 * hd, hd);
  k.memory(Pass::input, "residual'", 2 * hd, hd);
  k.gemm(Pass::weight, "w1.w", f, h, b);
  k.gemm(Pass::weight, "w2.w", h, f, b);
  k.memory(Pass::weight, "biases", fd + hd, 0);
  return k.take();
}

// A kind without a decomposition: each pass one roofline kernel of the
// analytic model's FLOPs and bytes (profiles/analytic.hpp).
std::vector<Kernel> roofline_kernels(const Layer& layer, int b, DType dtype) {
  Kernels k(bytes_per_element(dtype));
  const LayerBytes bytes = bytes_at(layer, b, dtype);
  const double bd = b;
  const double weights = static_cast<double>(param_bytes(layer, dtype));
  const double stash = static_cast<double>(bytes.activation_bytes);
  const double grad_out = static_cast<double>(bytes.output_bytes);
  const double grad_in = bd * static_cast<double>(layer.input_elems) * bytes_per_element(dtype);
  k.roofline(Pass::forward, layer.kind, bd * layer.fwd_flops, weights + stash + grad_out);
  if (layer.input_elems > 0) {
    k.roofline(Pass::input, layer.kind + "'", bd * layer.bwd_input_flops, weights + stash + grad_out + grad_in);
  }
  if (layer.params > 0) {
    k.roofline(Pass::weight, layer.kind + ".w", bd * layer.bwd_weight_flops, 2 * weights + stash + grad_out);
  }
  return k.take();
}

}  // namespace

std::vector<Kernel> layer_kernels(const Model& model, const Layer& layer, int micro_batch_size, DType dtype) {
  if (micro_batch_size < 1) {
    throw InputError(fmt::format("layer '{}': micro-batch size must be at least 1, got {}", layer.name,
                                 micro_batch_size));
  }
  const double e = bytes_per_element(dtype);
  const Shape s{.b = micro_batch_size, .d = layer_dims(model, layer.ffn_width)};
  const std::string_view kind = layer.kind;
  if (kind == layer_kind::transformer_block) return block_kernels(s, e, /*llama=*/false);
  if (kind == layer_kind::llama_block) return block_kernels(s, e, /*llama=*/true);
  if (kind == layer_kind::lm_head) return head_kernels(s, e, /*rms=*/false);
  if (kind == layer_kind::rms_head) return head_kernels(s, e, /*rms=*/true);
  if (kind == layer_kind::embedding || kind == layer_kind::token_embedding) return embedding_kernels(s, e);
  if (kind == layer_kind::mlp_block) return mlp_kernels(layer, micro_batch_size, e);
  if (kind == layer_kind::mse_loss) {
    Kernels k(e);
    const double x = static_cast<double>(micro_batch_size) * static_cast<double>(layer.input_elems);
    k.memory(Pass::forward, "mse", 2 * x, 0);
    k.memory(Pass::input, "mse'", 2 * x, x);
    return k.take();
  }
  return roofline_kernels(layer, micro_batch_size, dtype);
}

double kernel_flops(const std::vector<Kernel>& kernels, KernelPass pass) {
  double total = 0;
  for (const Kernel& k : kernels) {
    if (k.pass == pass) total += k.flops;
  }
  return total;
}

}  // namespace gpipe::models
