// The transformer_block layer, GPT-2 pre-LN (models/model.hpp):
//   a = x + Wo attn(LN1(x)) + bo,   y = a + W2 gelu(W1 LN2(a) + b1) + b2,
// with biases on every Linear and causal attention over A heads (naive,
// keeping P, or flash, keeping its log-sum-exp, as the model's attn= says).
//
// Split over a tensor-parallel group of T (a model split by
// models::split_tensor_parallel, and the group): this part holds A/T heads of
// Wqkv and bqkv and the matching columns of Wo, and F/T of W1, b1 and W2's
// columns; the LayerNorms and bo, b2 whole. Wo's and W2's outputs are
// partial sums, summed over the group before the bias and the residual; so
// are the input gradients of Wqkv and W1, before the LayerNorms' backward.
//
// With the model's dropout=p (exec/cpu/ops/dropout.hpp): the attention
// probabilities before P v, and Wo's and W2's outputs (bias included) before
// each residual add, as GPT-2 and Megatron-LM drop them. The hidden masks are
// drawn over whole rows, the same in every part; the probabilities' over the
// layer's heads, each part drawing its own heads'.
#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/dropout.hpp"
#include "exec/cpu/ops/flash_attention.hpp"
#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::transformer_block;

class TransformerBlock final : public KindLayer {
 public:
  TransformerBlock(const models::Layer& spec, const models::Model& model, NormalInit& init,
                   TensorParallelComm* group)
      : KindLayer(model, spec, init),
        h_(model.hidden),
        s_(model.seq),
        a_(model.heads),
        f_(spec.ffn_width),
        flash_(model.attention == models::Attention::flash),
        group_(model.tensor_parallel > 1 ? group : nullptr) {
    if (a_ < 1 || h_ % a_ != 0 || f_ < 1) {
      throw InputError(fmt::format(
          "layer {} ({}): hidden {} is not split evenly by heads {} or ffn width {} < 1", spec.name,
          spec.kind, h_, a_, f_));
    }
    // This part's heads and feed-forward columns (all of them when whole).
    const int t = model.tensor_parallel;
    if (t > 1 && (group_ == nullptr || group_->size() != t)) {
      throw std::logic_error(fmt::format("layer {}: split over {} without a group of {}", spec.name, t, t));
    }
    a_ /= t;
    f_ /= t;
    attn_ = h_ / t;
    first_head_ = group_ != nullptr ? group_->rank() * a_ : 0;
  }

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b =
        expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, s_, h_});
    const std::int64_t rows = b * s_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kNormed1; k < layout_.kept.size(); ++k) {
      stash.tensors.push_back(kept(k, b, account));
    }
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    Tensor y = Tensor::uninitialized({b, s_, h_});
    const DropoutDraw draw = dropout_draw();

    layernorm_forward(rows, h_, at(kX), value(kGamma1), value(kBeta1), at(kNormed1),
                      at(kStats1));
    linear_forward({rows, h_, 3 * attn_}, at(kNormed1), value(kWqkv), value(kBqkv), at(kQkv));
    attend(stash, b, draw, at(kAttn));
    if (has_dropout()) {
      // a = x + drop(Wo attn + bo); y = a + drop(W2 gelu + b2).
      row_parallel_forward(group_, {rows, attn_, h_}, at(kAttn), value(kWo), value(kBo), at(kA), nullptr);
      drop_and_add(stash, kMaskA, DropoutSite::attention_out, draw, at(kX), at(kA));
    } else {
      row_parallel_forward(group_, {rows, attn_, h_}, at(kAttn), value(kWo), value(kBo), at(kA), at(kX));
    }
    layernorm_forward(rows, h_, at(kA), value(kGamma2), value(kBeta2), at(kNormed2),
                      at(kStats2));
    linear_forward({rows, h_, f_}, at(kNormed2), value(kW1), value(kB1), at(kPreGelu));
    gelu_forward(rows * f_, at(kPreGelu), at(kGelu));
    if (has_dropout()) {
      row_parallel_forward(group_, {rows, f_, h_}, at(kGelu), value(kW2), value(kB2), y.data(), nullptr);
      drop_and_add(stash, kMaskY, DropoutSite::mlp_out, draw, at(kA), y.data());
    } else {
      row_parallel_forward(group_, {rows, f_, h_}, at(kGelu), value(kW2), value(kB2), y.data(), at(kA));
    }
    drop_recomputed(stash);
    return y;
  }

  // I: the input gradient, and the LayerNorms' gamma and beta; W keeps each
  // Linear's input and output gradient (d pre-GELU in pre-GELU's storage).
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* weight_account) override {
    expect_stash(spec_, stash, layout_.kept.size());
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, s_, h_});
    const std::int64_t rows = b * s_;
    const DropoutDraw draw = dropout_draw();
    run_again(stash, b, draw);
    release_all_but(stash, {kNormed1, kAttn, kNormed2, kPreGelu, kGelu});
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    // W2's output gradient: dy, through the dropout (W keeps it).
    Tensor dy = grad_output.clone(weight_account);
    if (has_dropout()) mask_gradient(stash, kMaskY, draw, dy);

    // MLP branch, then LN2: da = dy + LN2'(W1'(gelu'(W2'(dy)))).
    Tensor dact = Tensor::uninitialized({b, s_, f_});
    linear_backward_input({rows, f_, h_}, value(kW2), dy.data(), dact.data());
    float* dpre = at(kPreGelu);
    gelu_backward(rows * f_, dpre, dact.data(), dpre);
    // One [rows, H] scratch, reused by each step below in turn.
    Tensor dh = Tensor::uninitialized({b, s_, h_});
    linear_backward_input({rows, h_, f_}, value(kW1), dpre, dh.data());
    sum_over_group(group_, dh);  // each part's columns' share of d LN2-out
    // da: the residual's share and LN2's. Without dropout it is also Wo's
    // output gradient, which W keeps; with it, Wo's is da through the dropout.
    Tensor da = grad_output.clone(has_dropout() ? nullptr : weight_account);
    layernorm_backward(rows, h_, at(kA), at(kStats2), value(kGamma2), dh.data(), da.data(),
                       grad(kGamma2), grad(kBeta2));
    Tensor dz = has_dropout() ? da.clone(weight_account) : Tensor();
    if (has_dropout()) mask_gradient(stash, kMaskA, draw, dz);
    Tensor& dwo = has_dropout() ? dz : da;

    // Attention branch, then LN1: dx = da + LN1'(Wqkv'(attn'(Wo'(da)))).
    Tensor dattn = attn_ == h_ ? Tensor() : Tensor::uninitialized({b, s_, attn_});
    float* dattn_data = attn_ == h_ ? dh.data() : dattn.data();
    linear_backward_input({rows, attn_, h_}, value(kWo), dwo.data(), dattn_data);
    Tensor dqkv = Tensor::uninitialized({b, s_, 3 * attn_}, ElementType::f32, weight_account);
    if (flash_) {
      flash_attention_backward({b, s_, attn_, a_}, at(kQkv), at(kAttn), at(kProbs), dattn_data,
                               dqkv.data(), {&draw, first_head_});
    } else {
      attention_backward({b, s_, attn_, a_}, at(kQkv), at(kProbs), dattn_data, dqkv.data(), probabilities_dropout(stash));
    }
    dattn = Tensor();
    linear_backward_input({rows, h_, 3 * attn_}, value(kWqkv), dqkv.data(), dh.data());
    sum_over_group(group_, dh);  // each part's heads' share of d LN1-out
    Tensor dx = da.clone();  // the residual's share; LN1 adds its own
    layernorm_backward(rows, h_, at(kX), at(kStats1), value(kGamma1), dh.data(), dx.data(),
                       grad(kGamma1), grad(kBeta1));

    start_weight_stash(weight_stash);
    auto& w = weight_stash.tensors;
    w[weight_kept::kNormed1] = std::move(stash.tensors[kNormed1]);
    w[weight_kept::kDQkv] = std::move(dqkv);
    w[weight_kept::kAttn] = std::move(stash.tensors[kAttn]);
    w[weight_kept::kDA] = std::move(dwo);
    w[weight_kept::kNormed2] = std::move(stash.tensors[kNormed2]);
    w[weight_kept::kDPreGelu] = std::move(stash.tensors[kPreGelu]);
    w[weight_kept::kGelu] = std::move(stash.tensors[kGelu]);
    w[weight_kept::kDOut] = std::move(dy);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    namespace w = weight_kept;
    expect_weight_stash(spec_, weight_stash, w::kCount);
    const std::int64_t rows = weight_stash.tensors[w::kDOut].dim(0) * s_;
    auto at = [&](w::Kept k) { return weight_stash.tensors[k].data(); };
    linear_backward_weight({rows, f_, h_}, at(w::kGelu), at(w::kDOut), grad(kW2), grad(kB2));
    linear_backward_weight({rows, h_, f_}, at(w::kNormed2), at(w::kDPreGelu), grad(kW1), grad(kB1));
    linear_backward_weight({rows, attn_, h_}, at(w::kAttn), at(w::kDA), grad(kWo), grad(kBo));
    linear_backward_weight({rows, h_, 3 * attn_}, at(w::kNormed1), at(w::kDQkv), grad(kWqkv),
                           grad(kBqkv));
  }

 private:
  // The forwards of the modules the model recomputes (recompute=), into
  // their tensors made again: the forward's own ops on the kept inputs, so
  // the same values bit for bit. The MLP's down projection and its
  // collective run too, into a temporary, as a checkpoint of the module does.
  void run_again(Stash& stash, std::int64_t b, const DropoutDraw& draw) {
    const models::RecomputeModules& again = recomputes();
    if (!again.any()) return;
    remake_recomputed(stash, b);
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const std::int64_t rows = b * s_;
    if (again.layernorm) {
      layernorm_forward(rows, h_, at(kX), value(kGamma1), value(kBeta1), at(kNormed1), at(kStats1));
      layernorm_forward(rows, h_, at(kA), value(kGamma2), value(kBeta2), at(kNormed2), at(kStats2));
    }
    if (again.mlp) {
      linear_forward({rows, h_, f_}, at(kNormed2), value(kW1), value(kB1), at(kPreGelu));
      gelu_forward(rows * f_, at(kPreGelu), at(kGelu));
      Tensor out = Tensor::uninitialized({b, s_, h_});
      row_parallel_forward(group_, {rows, f_, h_}, at(kGelu), value(kW2), value(kB2), out.data(), at(kA));
    }
    if (again.core_attn) {
      Tensor out = Tensor::uninitialized({b, s_, attn_});
      attend(stash, b, draw, out.data());
    }
  }

  // The attention core into `out`, filling P (or its log-sum-exp) and, with
  // dropout and naive attention, the probabilities' mask and dropped copy.
  void attend(Stash& stash, std::int64_t b, const DropoutDraw& draw, float* out) {
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    if (flash_) {
      flash_attention_forward({b, s_, attn_, a_}, at(kQkv), out, at(kProbs), {&draw, first_head_});
      return;
    }
    if (has_dropout()) {
      draw_mask(draw, DropoutSite::probabilities, b, a_ * s_ * s_, first_head_ * s_ * s_,
                stash.tensors[kProbsMask].u8().data());
    }
    attention_forward({b, s_, attn_, a_}, at(kQkv), at(kProbs), out, probabilities_dropout(stash));
  }

  // Naive attention's dropout, from the stash's mask and dropped copy (none without dropout).
  [[nodiscard]] ProbabilitiesDropout probabilities_dropout(Stash& stash) const {
    if (!has_dropout() || flash_) return {};
    return {.mask = stash.tensors[kProbsMask].u8().data(), .scale = dropout_draw().scale(),
            .dropped = stash.tensors[kDroppedProbs].data()};
  }

  // A hidden dropout: its mask drawn into `slot` over whole rows, then
  // out = residual + out with the mask applied (out holds Wo's or W2's output).
  void drop_and_add(Stash& stash, std::size_t slot, DropoutSite site, const DropoutDraw& draw,
                    const float* residual, float* out) const {
    const std::int64_t b = stash.tensors[kX].dim(0);
    std::uint8_t* mask = stash.tensors[slot].u8().data();
    draw_mask(draw, site, b, s_ * h_, 0, mask);
    const float scale = draw.scale();
    for (std::int64_t i = 0; i < b * s_ * h_; ++i) out[i] = residual[i] + (mask[i] != 0 ? out[i] * scale : 0.0F);
  }

  // A hidden dropout's backward: `grad` through the mask in `slot`, in place.
  static void mask_gradient(Stash& stash, std::size_t slot, const DropoutDraw& draw, Tensor& grad) {
    apply_mask(grad.numel(), stash.tensors[slot].u8().data(), draw.scale(), grad.data(), grad.data());
  }

  std::int64_t h_;
  std::int64_t s_;
  std::int64_t a_;
  std::int64_t f_;
  bool flash_;  // attn=flash: the kProbs slot holds the log-sum-exp [A,S]
  TensorParallelComm* group_;  // null when whole
  std::int64_t attn_ = 0;      // this part's heads' width, H/T
  std::int64_t first_head_ = 0;  // this part's first head among the layer's (dropout's masks)
};

}  // namespace

std::unique_ptr<Layer> make_transformer_block(const models::Model& model, const models::Layer& spec,
                                              NormalInit& init, TensorParallelComm* group) {
  return std::make_unique<TransformerBlock>(spec, model, init, group);
}

}  // namespace gpipe::exec::cpu
