// The llama_block layer (models/model.hpp), Llama's pre-norm block:
//   a = x + Wo attn(rope(Wqkv RMSNorm1(x))),  y = a + W2 (silu(W1 n2) * (W3 n2)), n2 = RMSNorm2(a)
// with no biases, grouped-query causal attention (A query heads sharing G
// key/value heads), the rotary embedding on q and k, and the attention flash
// (keeping the log-sum-exp) or naive (keeping P) as the model says.
//
// Split over a tensor-parallel group of T (a model split by
// models::split_tensor_parallel, and the group): this part holds A/T query
// heads and G/T key/value heads of Wqkv and the matching columns of Wo, and
// F/T of w1, w3 and w2's columns; the norms whole. Wo's and w2's outputs are
// partial sums, summed over the group before the residual; so are the input
// gradients of Wqkv and of w1 and w3, before the norms' backward.
//
// Split over a context-parallel group of C (a model split by
// models::split_context_parallel, and the group): this member holds S / C
// tokens of each sequence, two chunks of it (exec/cpu/context_attention.hpp);
// the rotary embedding turns each by its place in the sequence, and attention
// gathers the group's keys and values.
#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <stdexcept>

#include "base/error.hpp"
#include "exec/cpu/context_attention.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/flash_attention.hpp"
#include "exec/cpu/ops/gemm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/ops/rmsnorm.hpp"
#include "exec/cpu/ops/rope.hpp"
#include "exec/cpu/ops/swiglu.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/context_parallel.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::llama_block;

class LlamaBlock final : public KindLayer {
 public:
  LlamaBlock(const models::Layer& spec, const models::Model& model, NormalInit& init, TensorParallelComm* group,
             ContextParallelComm* context)
      : KindLayer(model, spec, init),
        h_(model.hidden),
        s_(models::tokens_per_gpu(model)),
        a_(model.heads),
        g_(model.kv_heads),
        f_(spec.ffn_width),
        theta_(model.rope_theta),
        flash_(model.attention == models::Attention::flash),
        group_(model.tensor_parallel > 1 ? group : nullptr) {
    if (a_ < 1 || g_ < 1 || h_ % a_ != 0 || a_ % g_ != 0 || (h_ / a_) % 2 != 0 || f_ < 1) {
      throw InputError(fmt::format(
          "layer {} ({}): hidden {}, heads {}, kv_heads {} and ffn width {} do not make a block "
          "(heads must split hidden into even head widths, kv_heads must divide heads)",
          spec.name, spec.kind, h_, a_, g_, f_));
    }
    d_ = h_ / a_;
    // This part's heads and feed-forward columns (all of them when whole).
    const int t = model.tensor_parallel;
    if (t > 1 && (group_ == nullptr || group_->size() != t)) {
      throw std::logic_error(fmt::format("layer {}: split over {} without a group of {}", spec.name, t, t));
    }
    a_ /= t;
    g_ /= t;
    f_ /= t;
    attn_ = a_ * d_;
    qkv_ = (a_ + 2 * g_) * d_;
    const int c = model.context_parallel;
    if (c > 1) {
      if (context == nullptr || context->size() != c || !flash_) {
        throw std::logic_error(fmt::format("layer {}: context split over {} without a group of {} or flash attention",
                                           spec.name, c, c));
      }
      context_.emplace(attention_shape(1), model.seq, *context);
    }
  }

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b =
        expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, s_, h_});
    const std::int64_t rows = b * s_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kNormed1; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    Tensor y = Tensor::uninitialized({b, s_, h_});

    rmsnorm_forward(rows, h_, at(kX), value(kNorm1), at(kNormed1), at(kRstd1));
    linear_forward({rows, h_, qkv_}, at(kNormed1), value(kWqkv), nullptr, at(kQkv));
    rotate(b, at(kQkv), /*inverse=*/false);
    attend(b, at(kQkv), at(kAttn), at(kScores));
    row_parallel_forward(group_, {rows, attn_, h_}, at(kAttn), value(kWo), nullptr, at(kA), at(kX));
    rmsnorm_forward(rows, h_, at(kA), value(kNorm2), at(kNormed2), at(kRstd2));
    linear_forward({rows, h_, f_}, at(kNormed2), value(kW1), nullptr, at(kGate));
    linear_forward({rows, h_, f_}, at(kNormed2), value(kW3), nullptr, at(kUp));
    swiglu_forward(rows * f_, at(kGate), at(kUp), at(kH));
    row_parallel_forward(group_, {rows, f_, h_}, at(kH), value(kW2), nullptr, y.data(), at(kA));
    drop_recomputed(stash);
    return y;
  }

  // I: the input gradient and the gammas'; W keeps each Linear's input and
  // output gradient (d gate and d up in gate's and up's storage).
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* weight_account) override {
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, s_, h_});
    const std::int64_t rows = b * s_;
    run_again(stash, b);
    release_all_but(stash, {kNormed1, kAttn, kNormed2, kGate, kUp, kH});
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    Tensor dy = grad_output.clone(weight_account);

    // Feed-forward, then norm2: da = dy + norm2'(W1'(d gate) + W3'(d up)).
    Tensor dh = Tensor::uninitialized({b, s_, f_});
    linear_backward_input({rows, f_, h_}, value(kW2), dy.data(), dh.data());
    swiglu_backward(rows * f_, at(kGate), at(kUp), dh.data(), at(kGate), at(kUp));
    Tensor dn = Tensor::uninitialized({b, s_, h_});  // reused below for each [rows, H] gradient
    linear_backward_input({rows, h_, f_}, value(kW1), at(kGate), dn.data());
    gemm(Transpose::no, Transpose::no, rows, h_, f_, 1.0F, at(kUp), f_, value(kW3), h_, 1.0F,
         dn.data(), h_);
    sum_over_group(group_, dn);  // each part's columns' share of d norm2-out
    Tensor da = grad_output.clone(weight_account);
    rmsnorm_backward(rows, h_, at(kA), at(kRstd2), value(kNorm2), dn.data(), da.data(),
                     grad(kNorm2));

    // Attention, then norm1: dx = da + norm1'(Wqkv'(rope'(attn'(Wo'(da))))).
    Tensor dattn = attn_ == h_ ? Tensor() : Tensor::uninitialized({b, s_, attn_});
    float* dattn_data = attn_ == h_ ? dn.data() : dattn.data();
    linear_backward_input({rows, attn_, h_}, value(kWo), da.data(), dattn_data);
    Tensor dqkv = Tensor::uninitialized({b, s_, qkv_}, ElementType::f32, weight_account);
    if (context_) {
      context_->backward(b, at(kQkv), at(kAttn), at(kScores), dattn_data, dqkv.data());
    } else if (flash_) {
      flash_attention_backward(attention_shape(b), at(kQkv), at(kAttn), at(kScores), dattn_data,
                               dqkv.data());
    } else {
      attention_backward(attention_shape(b), at(kQkv), at(kScores), dattn_data, dqkv.data());
    }
    dattn = Tensor();
    rotate(b, dqkv.data(), /*inverse=*/true);
    linear_backward_input({rows, h_, qkv_}, value(kWqkv), dqkv.data(), dn.data());
    sum_over_group(group_, dn);  // each part's heads' share of d norm1-out
    Tensor dx = da.clone();  // the residual's share; norm1 adds its own
    rmsnorm_backward(rows, h_, at(kX), at(kRstd1), value(kNorm1), dn.data(), dx.data(),
                     grad(kNorm1));

    start_weight_stash(weight_stash);
    namespace w = weight_kept;
    auto& kept_for_w = weight_stash.tensors;
    kept_for_w[w::kNormed1] = std::move(stash.tensors[kNormed1]);
    kept_for_w[w::kDQkv] = std::move(dqkv);
    kept_for_w[w::kAttn] = std::move(stash.tensors[kAttn]);
    kept_for_w[w::kDA] = std::move(da);
    kept_for_w[w::kNormed2] = std::move(stash.tensors[kNormed2]);
    kept_for_w[w::kDGate] = std::move(stash.tensors[kGate]);
    kept_for_w[w::kDUp] = std::move(stash.tensors[kUp]);
    kept_for_w[w::kH] = std::move(stash.tensors[kH]);
    kept_for_w[w::kDOut] = std::move(dy);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    namespace w = weight_kept;
    expect_weight_stash(spec_, weight_stash, w::kCount);
    const std::int64_t rows = weight_stash.tensors[w::kDOut].dim(0) * s_;
    auto at = [&](w::Kept k) { return weight_stash.tensors[k].data(); };
    linear_backward_weight({rows, f_, h_}, at(w::kH), at(w::kDOut), grad(kW2), nullptr);
    linear_backward_weight({rows, h_, f_}, at(w::kNormed2), at(w::kDGate), grad(kW1), nullptr);
    linear_backward_weight({rows, h_, f_}, at(w::kNormed2), at(w::kDUp), grad(kW3), nullptr);
    linear_backward_weight({rows, attn_, h_}, at(w::kAttn), at(w::kDA), grad(kWo), nullptr);
    linear_backward_weight({rows, h_, qkv_}, at(w::kNormed1), at(w::kDQkv), grad(kWqkv), nullptr);
  }

 private:
  // The forwards of the modules the model recomputes (recompute=), into
  // their tensors made again: the forward's own ops on the kept inputs, so
  // the same values bit for bit. The MLP's down projection and its
  // collective run too, into a temporary, as a checkpoint of the module does.
  void run_again(Stash& stash, std::int64_t b) {
    const models::RecomputeModules& again = recomputes();
    if (!again.any()) return;
    remake_recomputed(stash, b);
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const std::int64_t rows = b * s_;
    if (again.layernorm) {
      rmsnorm_forward(rows, h_, at(kX), value(kNorm1), at(kNormed1), at(kRstd1));
      rmsnorm_forward(rows, h_, at(kA), value(kNorm2), at(kNormed2), at(kRstd2));
    }
    if (again.mlp) {
      linear_forward({rows, h_, f_}, at(kNormed2), value(kW1), nullptr, at(kGate));
      linear_forward({rows, h_, f_}, at(kNormed2), value(kW3), nullptr, at(kUp));
      swiglu_forward(rows * f_, at(kGate), at(kUp), at(kH));
      Tensor out = Tensor::uninitialized({b, s_, h_});
      row_parallel_forward(group_, {rows, f_, h_}, at(kH), value(kW2), nullptr, out.data(), at(kA));
    }
    if (again.core_attn) {
      Tensor out = Tensor::uninitialized({b, s_, attn_});
      attend(b, at(kQkv), out.data(), at(kScores));
    }
  }

  // The attention core's forward: out, and lse (flash) or P (naive) in `scores`.
  void attend(std::int64_t b, const float* qkv, float* out, float* scores) const {
    if (context_) {
      context_->forward(b, qkv, out, scores);
    } else if (flash_) {
      flash_attention_forward(attention_shape(b), qkv, out, scores);
    } else {
      attention_forward(attention_shape(b), qkv, scores, out);
    }
  }

  [[nodiscard]] AttentionShape attention_shape(std::int64_t b) const {
    return {.batch = b, .seq = s_, .hidden = attn_, .heads = a_, .kv_heads = g_, .causal = true};
  }

  // The rotary embedding of q's A heads and k's G heads in a packed qkv
  // [b, S, (A+2G)d] (forward), or its inverse on their gradients.
  void rotate(std::int64_t b, float* qkv, bool inverse) const {
    const RopeShape q{.batch = b, .seq = s_, .heads = a_, .head_dim = d_, .row_stride = qkv_,
                      .theta = static_cast<double>(theta_),
                      .positions = context_ ? context_->positions() : nullptr};
    RopeShape k = q;
    k.heads = g_;
    if (inverse) {
      rope_backward(q, qkv);
      rope_backward(k, qkv + a_ * d_);
    } else {
      rope_forward(q, qkv);
      rope_forward(k, qkv + a_ * d_);
    }
  }

  std::int64_t h_;
  std::int64_t s_;
  std::int64_t a_;
  std::int64_t g_;
  std::int64_t f_;
  std::int64_t theta_;
  bool flash_;
  TensorParallelComm* group_;  // null when whole
  std::optional<ContextAttention> context_;  // with a context-parallel group
  std::int64_t d_ = 0;
  std::int64_t attn_ = 0;  // this part's heads' width, A/T d
  std::int64_t qkv_ = 0;   // its packed q, k, v: (A + 2G)/T d
};

}  // namespace

std::unique_ptr<Layer> make_llama_block(const models::Model& model, const models::Layer& spec,
                                        NormalInit& init, TensorParallelComm* group, ContextParallelComm* context) {
  return std::make_unique<LlamaBlock>(spec, model, init, group, context);
}

}  // namespace gpipe::exec::cpu
