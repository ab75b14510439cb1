// The dit_head layer (models/model.hpp), DiT's FinalLayer and its loss:
//   (shift, scale) = Wada SiLU(c) + bada
//   prediction = W (LN(x) (1 + scale) + shift) + b        [T, P*P*2C]
//   per-sample loss = mean over the prediction's elements of (prediction - target)^2
// with a LayerNorm without affine; x is [b, T+1, H], the tokens and c.
// (DiT trains the noise channels by MSE and the variance channels by a
// variational bound; gpipe's synthetic task uses MSE on both: the same
// matrix products, a simpler loss.)
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/ops/modulation.hpp"
#include "exec/cpu/ops/swiglu.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::dit_head;

class DitHead final : public KindLayer {
 public:
  DitHead(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init),
        h_(model.hidden),
        t_(model.seq),
        o_(static_cast<std::int64_t>(model.patch) * model.patch * 2 * model.channels) {}

  Tensor forward(Tensor input, const Tensor* target, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b =
        expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, t_ + 1, h_});
    expect_tensor(spec_, "target", expect_target(spec_, target), ElementType::f32, {b, t_, o_});
    const std::int64_t rows = b * t_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kSiluC; k < kTarget; ++k) stash.tensors.push_back(kept(k, b, account));
    stash.tensors.push_back(target->clone(account));
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const float* x = at(kX);

    for (std::int64_t n = 0; n < b; ++n) silu_forward(h_, cond(x, n), at(kSiluC) + n * h_);
    linear_forward({b, h_, 2 * h_}, at(kSiluC), value(kAdaW), value(kAdaB), at(kMod));
    Tensor xhat = Tensor::uninitialized({b, t_, h_});
    normalize(b, x, xhat.data(), at(kStats));
    modulate_forward(b, t_, h_, xhat.data(), at(kMod), at(kMod) + h_, 2 * h_, at(kModulated));
    linear_forward({rows, h_, o_}, at(kModulated), value(kW), value(kB), at(kOut));

    Tensor loss({b});
    const std::int64_t per_sample = t_ * o_;
    for (std::int64_t n = 0; n < b; ++n) {
      double sum = 0.0;
      for (std::int64_t j = n * per_sample; j < (n + 1) * per_sample; ++j) {
        const double e = static_cast<double>(at(kOut)[j]) - at(kTarget)[j];
        sum += e * e;
      }
      loss.data()[n] = static_cast<float>(sum / static_cast<double>(per_sample));
    }
    return loss;
  }

  // I: the input gradient (tokens and c); W keeps the two Linears' inputs
  // and output gradients.
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* weight_account) override {
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b});
    const std::int64_t rows = b * t_;
    release_all_but(stash, {kSiluC, kModulated});
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const float* x = at(kX);
    const std::int64_t per_sample = t_ * o_;
    Tensor dout = Tensor::uninitialized({b, t_, o_}, ElementType::f32, weight_account);
    for (std::int64_t n = 0; n < b; ++n) {
      const float scale = 2.0F * grad_output.data()[n] / static_cast<float>(per_sample);
      for (std::int64_t j = n * per_sample; j < (n + 1) * per_sample; ++j) {
        dout.data()[j] = scale * (at(kOut)[j] - at(kTarget)[j]);
      }
    }
    Tensor dmod({b, 2 * h_}, ElementType::f32, weight_account);  // zeroed: summed into
    Tensor dm = Tensor::uninitialized({b, t_, h_});
    linear_backward_input({rows, h_, o_}, value(kW), dout.data(), dm.data());
    Tensor xhat = Tensor::uninitialized({b, t_, h_});
    Tensor stats = Tensor::uninitialized({b, t_, 2});
    normalize(b, x, xhat.data(), stats.data());  // LN(x) again, as the forward made it
    modulate_backward(b, t_, h_, xhat.data(), at(kMod) + h_, 2 * h_, dm.data(), dm.data(),
                      dmod.data(), dmod.data() + h_);
    Tensor dx({b, t_ + 1, h_});  // zeroed: the LayerNorm backward adds into it
    Tensor dsilu = Tensor::uninitialized({b, h_});
    linear_backward_input({b, h_, 2 * h_}, value(kAdaW), dmod.data(), dsilu.data());
    for (std::int64_t n = 0; n < b; ++n) {
      float* dxn = dx.data() + n * (t_ + 1) * h_;
      layernorm_backward(t_, h_, x + n * (t_ + 1) * h_, at(kStats) + n * t_ * 2, nullptr,
                         dm.data() + n * t_ * h_, dxn, nullptr, nullptr);
      silu_backward(h_, cond(x, n), dsilu.data() + n * h_, dxn + t_ * h_);
    }

    start_weight_stash(weight_stash);
    namespace w = weight_kept;
    weight_stash.tensors[w::kSiluC] = std::move(stash.tensors[kSiluC]);
    weight_stash.tensors[w::kDMod] = std::move(dmod);
    weight_stash.tensors[w::kModulated] = std::move(stash.tensors[kModulated]);
    weight_stash.tensors[w::kDOut] = std::move(dout);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    namespace w = weight_kept;
    expect_weight_stash(spec_, weight_stash, w::kCount);
    const std::int64_t b = weight_stash.tensors[w::kDOut].dim(0);
    auto at = [&](w::Kept k) { return weight_stash.tensors[k].data(); };
    linear_backward_weight({b * t_, h_, o_}, at(w::kModulated), at(w::kDOut), grad(kW), grad(kB));
    linear_backward_weight({b, h_, 2 * h_}, at(w::kSiluC), at(w::kDMod), grad(kAdaW), grad(kAdaB));
  }

 private:
  // LN(x) of every sample's tokens (no affine), and its statistics.
  void normalize(std::int64_t b, const float* x, float* xhat, float* stats) const {
    for (std::int64_t n = 0; n < b; ++n) {
      layernorm_forward(t_, h_, x + n * (t_ + 1) * h_, nullptr, nullptr, xhat + n * t_ * h_,
                        stats + n * t_ * 2);
    }
  }
  [[nodiscard]] const float* cond(const float* x, std::int64_t n) const {
    return x + (n * (t_ + 1) + t_) * h_;
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t o_;
};

}  // namespace

std::unique_ptr<Layer> make_dit_head(const models::Model& model, const models::Layer& spec,
                                     NormalInit& init) {
  return std::make_unique<DitHead>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
