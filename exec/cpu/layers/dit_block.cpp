// The dit_block layer (models/model.hpp), DiT's block with adaLN-Zero:
//   (shift1, scale1, gate1, shift2, scale2, gate2) = Wada SiLU(c) + bada
//   a = x + gate1 * Wo attn(Wqkv (LN(x) (1 + scale1) + shift1))
//   y = a + gate2 * W2 gelu(W1 (LN(a) (1 + scale2) + shift2))
// with LayerNorms without affine, biases on every Linear, and attention over
// all tokens (no mask). Input and output are [b, T+1, H]: the tokens, then
// the conditioning row c, which the block reads and hands on unchanged.
// With cache=1 (serving runs) the attention's T queries attend over the
// sequence's previous chunk too (ops/cached_attention.hpp): the block keeps
// each sequence's last keys and values, [b, T, H] each, zeroed at the sequence's
// start (a first chunk's previous one scores 0 and adds nothing).
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/attention.hpp"
#include "exec/cpu/ops/cached_attention.hpp"
#include "exec/cpu/ops/flash_attention.hpp"
#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/ops/modulation.hpp"
#include "exec/cpu/ops/swiglu.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::dit_block;

// Offsets of the six modulation vectors in a sample's [6H] row, in DiT's order.
enum Mod : std::int64_t { kShift1, kScale1, kGate1, kShift2, kScale2, kGate2, kMods };

class DitBlock final : public KindLayer {
 public:
  DitBlock(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init),
        h_(model.hidden),
        t_(model.seq),
        a_(model.heads),
        f_(spec.ffn_width),
        flash_(model.attention == models::Attention::flash),
        cache_(model.attention_cache) {
    if (a_ < 1 || h_ % a_ != 0 || f_ < 1) {
      throw InputError(fmt::format("layer {} ({}): hidden {} is not split evenly by heads {}",
                                   spec.name, spec.kind, h_, a_));
    }
  }

  std::int64_t start_sequences(int sequences, std::int64_t b, MemoryAccount* account) override {
    if (!cache_) return 0;
    kept_k_.clear();
    kept_v_.clear();
    std::int64_t bytes = 0;
    for (int s = 0; s < sequences; ++s) {
      bytes += kept_k_.emplace_back(std::vector<std::int64_t>{b, t_, h_}, ElementType::f32, account).bytes();
      bytes += kept_v_.emplace_back(std::vector<std::int64_t>{b, t_, h_}, ElementType::f32, account).bytes();
    }
    sequence_ = 0;
    return bytes;
  }

  void select_sequence(int sequence) override {
    if (cache_ && (sequence < 0 || static_cast<std::size_t>(sequence) >= kept_k_.size())) {
      throw std::logic_error(fmt::format("layer {}: sequence {} of {} started", spec_.name, sequence, kept_k_.size()));
    }
    sequence_ = static_cast<std::size_t>(sequence);
  }

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b =
        expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, t_ + 1, h_});
    const std::int64_t rows = b * t_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kSiluC; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const float* x = at(kX);
    const std::int64_t stride = kMods * h_;

    for (std::int64_t n = 0; n < b; ++n) silu_forward(h_, cond(x, n), at(kSiluC) + n * h_);
    linear_forward({b, h_, stride}, at(kSiluC), value(kAdaW), value(kAdaB), at(kMod));
    const float* mod = at(kMod);

    Tensor xhat = Tensor::uninitialized({b, t_, h_});
    for (std::int64_t n = 0; n < b; ++n) {
      layernorm_forward(t_, h_, tokens(x, n), nullptr, nullptr, xhat.data() + n * t_ * h_,
                        at(kStats1) + n * t_ * 2);
    }
    modulate_forward(b, t_, h_, xhat.data(), mod + kShift1 * h_, mod + kScale1 * h_, stride, at(kMod1));
    linear_forward({rows, h_, 3 * h_}, at(kMod1), value(kWqkv), value(kBqkv), at(kQkv));
    if (cache_) {
      attend_with_cache(b, at(kQkv), at(kAttn));
    } else if (flash_) {
      flash_attention_forward(attention_shape(b), at(kQkv), at(kAttn), at(kScores));
    } else {
      attention_forward(attention_shape(b), at(kQkv), at(kScores), at(kAttn));
    }
    linear_forward({rows, h_, h_}, at(kAttn), value(kWo), value(kBo), at(kO));
    for (std::int64_t n = 0; n < b; ++n) {
      gated_residual_forward(1, t_, h_, tokens(x, n), mod + n * stride + kGate1 * h_, stride,
                             at(kO) + n * t_ * h_, at(kA) + n * t_ * h_);
    }
    layernorm_forward(rows, h_, at(kA), nullptr, nullptr, xhat.data(), at(kStats2));
    modulate_forward(b, t_, h_, xhat.data(), mod + kShift2 * h_, mod + kScale2 * h_, stride, at(kMod2));
    linear_forward({rows, h_, f_}, at(kMod2), value(kW1), value(kB1), at(kPreGelu));
    gelu_forward(rows * f_, at(kPreGelu), at(kGelu));
    linear_forward({rows, f_, h_}, at(kGelu), value(kW2), value(kB2), at(kF));

    Tensor y = Tensor::uninitialized({b, t_ + 1, h_});
    for (std::int64_t n = 0; n < b; ++n) {
      float* yn = y.data() + n * (t_ + 1) * h_;
      gated_residual_forward(1, t_, h_, at(kA) + n * t_ * h_, mod + n * stride + kGate2 * h_, stride,
                             at(kF) + n * t_ * h_, yn);
      std::memcpy(yn + t_ * h_, cond(x, n), static_cast<std::size_t>(h_) * sizeof(float));
    }
    return y;
  }

  // I: the input gradient (tokens and c); W keeps each Linear's input and
  // output gradient (d pre-GELU in pre-GELU's storage).
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* weight_account) override {
    if (cache_) {
      throw InputError(fmt::format("layer {} ({}): dit's cache=1 serves inference streams, which have no "
                                   "backward",
                                   spec_.name, spec_.kind));
    }
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, t_ + 1, h_});
    const std::int64_t rows = b * t_;
    const std::int64_t stride = kMods * h_;
    release_all_but(stash, {kSiluC, kMod1, kAttn, kMod2, kPreGelu, kGelu});
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const float* x = at(kX);
    const float* mod = at(kMod);
    const float* dy = grad_output.data();
    Tensor dmod({b, stride}, ElementType::f32, weight_account);  // zeroed: summed into
    Tensor df = Tensor::uninitialized({b, t_, h_}, ElementType::f32, weight_account);
    Tensor da = Tensor::uninitialized({b, t_, h_});

    // MLP branch: y = a + gate2 * f.
    for (std::int64_t n = 0; n < b; ++n) {
      const float* dyn = dy + n * (t_ + 1) * h_;
      gated_residual_backward(1, t_, h_, at(kF) + n * t_ * h_, mod + n * stride + kGate2 * h_, stride,
                              dyn, df.data() + n * t_ * h_, dmod.data() + n * stride + kGate2 * h_);
      std::memcpy(da.data() + n * t_ * h_, dyn, static_cast<std::size_t>(t_ * h_) * sizeof(float));
    }
    Tensor dgelu = Tensor::uninitialized({b, t_, f_});
    linear_backward_input({rows, f_, h_}, value(kW2), df.data(), dgelu.data());
    gelu_backward(rows * f_, at(kPreGelu), dgelu.data(), at(kPreGelu));
    Tensor dm = Tensor::uninitialized({b, t_, h_});  // each modulated LN's gradient in turn
    linear_backward_input({rows, h_, f_}, value(kW1), at(kPreGelu), dm.data());
    Tensor xhat = Tensor::uninitialized({b, t_, h_});
    Tensor stats = Tensor::uninitialized({b, t_, 2});
    // LN(a) again, bit for bit as the forward made it (the stash keeps its statistics only).
    layernorm_forward(rows, h_, at(kA), nullptr, nullptr, xhat.data(), stats.data());
    modulate_backward(b, t_, h_, xhat.data(), mod + kScale2 * h_, stride, dm.data(), dm.data(),
                      dmod.data() + kShift2 * h_, dmod.data() + kScale2 * h_);
    layernorm_backward(rows, h_, at(kA), at(kStats2), nullptr, dm.data(), da.data(), nullptr, nullptr);

    // Attention branch: a = x + gate1 * o.
    Tensor d_o = Tensor::uninitialized({b, t_, h_}, ElementType::f32, weight_account);
    gated_residual_backward(b, t_, h_, at(kO), mod + kGate1 * h_, stride, da.data(), d_o.data(),
                            dmod.data() + kGate1 * h_);
    Tensor dattn = Tensor::uninitialized({b, t_, h_});
    linear_backward_input({rows, h_, h_}, value(kWo), d_o.data(), dattn.data());
    Tensor dqkv = Tensor::uninitialized({b, t_, 3 * h_}, ElementType::f32, weight_account);
    if (flash_) {
      flash_attention_backward(attention_shape(b), at(kQkv), at(kAttn), at(kScores), dattn.data(),
                               dqkv.data());
    } else {
      attention_backward(attention_shape(b), at(kQkv), at(kScores), dattn.data(), dqkv.data());
    }
    linear_backward_input({rows, h_, 3 * h_}, value(kWqkv), dqkv.data(), dm.data());
    for (std::int64_t n = 0; n < b; ++n) {
      layernorm_forward(t_, h_, tokens(x, n), nullptr, nullptr, xhat.data() + n * t_ * h_,
                        stats.data() + n * t_ * 2);
    }
    modulate_backward(b, t_, h_, xhat.data(), mod + kScale1 * h_, stride, dm.data(), dm.data(),
                      dmod.data() + kShift1 * h_, dmod.data() + kScale1 * h_);

    Tensor dx = Tensor::uninitialized({b, t_ + 1, h_});
    Tensor dsilu = Tensor::uninitialized({b, h_});
    linear_backward_input({b, h_, stride}, value(kAdaW), dmod.data(), dsilu.data());
    for (std::int64_t n = 0; n < b; ++n) {
      float* dxn = dx.data() + n * (t_ + 1) * h_;
      std::memcpy(dxn, da.data() + n * t_ * h_, static_cast<std::size_t>(t_ * h_) * sizeof(float));
      layernorm_backward(t_, h_, tokens(x, n), at(kStats1) + n * t_ * 2, nullptr,
                         dm.data() + n * t_ * h_, dxn, nullptr, nullptr);
      // c: handed on unchanged (dy's row T) and read by the modulation.
      float* dsilu_n = dsilu.data() + n * h_;
      silu_backward(h_, cond(x, n), dsilu_n, dsilu_n);
      const float* dyc = dy + (n * (t_ + 1) + t_) * h_;
      float* dxc = dxn + t_ * h_;
      for (std::int64_t j = 0; j < h_; ++j) dxc[j] = dyc[j] + dsilu_n[j];
    }

    start_weight_stash(weight_stash);
    namespace w = weight_kept;
    auto& kept_for_w = weight_stash.tensors;
    kept_for_w[w::kSiluC] = std::move(stash.tensors[kSiluC]);
    kept_for_w[w::kDMod] = std::move(dmod);
    kept_for_w[w::kMod1] = std::move(stash.tensors[kMod1]);
    kept_for_w[w::kDQkv] = std::move(dqkv);
    kept_for_w[w::kAttn] = std::move(stash.tensors[kAttn]);
    kept_for_w[w::kDO] = std::move(d_o);
    kept_for_w[w::kMod2] = std::move(stash.tensors[kMod2]);
    kept_for_w[w::kDPreGelu] = std::move(stash.tensors[kPreGelu]);
    kept_for_w[w::kGelu] = std::move(stash.tensors[kGelu]);
    kept_for_w[w::kDF] = std::move(df);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    namespace w = weight_kept;
    expect_weight_stash(spec_, weight_stash, w::kCount);
    const std::int64_t b = weight_stash.tensors[w::kDF].dim(0);
    const std::int64_t rows = b * t_;
    auto at = [&](w::Kept k) { return weight_stash.tensors[k].data(); };
    linear_backward_weight({rows, f_, h_}, at(w::kGelu), at(w::kDF), grad(kW2), grad(kB2));
    linear_backward_weight({rows, h_, f_}, at(w::kMod2), at(w::kDPreGelu), grad(kW1), grad(kB1));
    linear_backward_weight({rows, h_, h_}, at(w::kAttn), at(w::kDO), grad(kWo), grad(kBo));
    linear_backward_weight({rows, h_, 3 * h_}, at(w::kMod1), at(w::kDQkv), grad(kWqkv), grad(kBqkv));
    linear_backward_weight({b, h_, kMods * h_}, at(w::kSiluC), at(w::kDMod), grad(kAdaW), grad(kAdaB));
  }

 private:
  // cache=1: the T queries over the sequence's previous keys and values and
  // their own; then the chunk's keys and values are the sequence's to keep.
  void attend_with_cache(std::int64_t b, const float* qkv, float* out) {
    const bool in_sequence = !kept_k_.empty();
    if (!in_sequence && !outside_.contains(b)) {
      // A forward outside a sequence (a warm-up, the profiler): a sequence of its own for its size.
      outside_.emplace(b, std::pair{Tensor({b, t_, h_}), Tensor({b, t_, h_})});
    }
    Tensor& keys = in_sequence ? kept_k_[sequence_] : outside_.at(b).first;
    Tensor& values = in_sequence ? kept_v_[sequence_] : outside_.at(b).second;
    if (keys.dim(0) != b) {
      throw InputError(fmt::format("layer {} ({}): an item of {} samples in a stream of items of {}", spec_.name,
                                   spec_.kind, b, keys.dim(0)));
    }
    cached_attention_forward({.batch = b, .tokens = t_, .hidden = h_, .heads = a_}, qkv, keys.data(), values.data(),
                             out);
    const auto width = static_cast<std::size_t>(h_) * sizeof(float);
    for (std::int64_t r = 0; r < b * t_; ++r) {
      std::memcpy(keys.data() + r * h_, qkv + r * 3 * h_ + h_, width);
      std::memcpy(values.data() + r * h_, qkv + r * 3 * h_ + 2 * h_, width);
    }
  }

  [[nodiscard]] AttentionShape attention_shape(std::int64_t b) const {
    return {.batch = b, .seq = t_, .hidden = h_, .heads = a_, .kv_heads = a_, .causal = false};
  }
  // Sample n's tokens and its conditioning row in a [b, T+1, H] tensor.
  [[nodiscard]] const float* tokens(const float* x, std::int64_t n) const { return x + n * (t_ + 1) * h_; }
  [[nodiscard]] const float* cond(const float* x, std::int64_t n) const {
    return x + (n * (t_ + 1) + t_) * h_;
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t a_;
  std::int64_t f_;
  bool flash_;
  bool cache_;  // cache=1
  // cache=1: per sequence, its previous chunk's keys and values [b, T, H].
  std::vector<Tensor> kept_k_, kept_v_;
  std::size_t sequence_ = 0;
  std::map<std::int64_t, std::pair<Tensor, Tensor>> outside_;  // per size, before any sequence started
};

}  // namespace

std::unique_ptr<Layer> make_dit_block(const models::Model& model, const models::Layer& spec,
                                      NormalInit& init) {
  return std::make_unique<DitBlock>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
