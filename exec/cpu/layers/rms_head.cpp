// The rms_head layer (llama; models/model.hpp): logits = RMSNorm(x) Wu^T, Wu
// [V,H] with no bias; per-sample loss = the mean over the S positions of the
// cross-entropy against the next-token targets. As lm_head, with RMSNorm.
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "models/context_parallel.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/cross_entropy.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/ops/rmsnorm.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::rms_head;

class RmsHead final : public KindLayer {
 public:
  RmsHead(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init), h_(model.hidden), s_(models::tokens_per_gpu(model)), v_(model.vocab) {}

  Tensor forward(Tensor input, const Tensor* target, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b =
        expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, s_, h_});
    expect_tensor(spec_, "target", expect_target(spec_, target), ElementType::i32, {b, s_});
    const std::int64_t rows = b * s_;
    expect_ids_below("target", target->i32().data(), rows, v_);
    input.charge_to(account);
    Tensor normed = kept(kNormed, b, account);
    Tensor rstd = kept(kRstd, b, account);
    Tensor probs = kept(kProbs, b, account);
    Tensor targets = target->clone(account);

    rmsnorm_forward(rows, h_, input.data(), value(kGamma), normed.data(), rstd.data());
    linear_forward({rows, h_, v_}, normed.data(), value(kWu), nullptr, probs.data());
    Tensor row_loss = Tensor::uninitialized({rows});
    cross_entropy_forward(rows, v_, probs.data(), targets.i32().data(), row_loss.data());
    Tensor loss = mean_per_sample(row_loss, b, s_);

    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(normed));
    stash.tensors.push_back(std::move(rstd));
    stash.tensors.push_back(std::move(probs));
    stash.tensors.push_back(std::move(targets));
    return loss;
  }

  // I: the input gradient and gamma's; W keeps Wu's input and output gradient
  // (d logits in the probabilities' storage).
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* /*weight_account*/) override {
    expect_stash(spec_, stash, kKeptCount);
    auto& kept = stash.tensors;
    const std::int64_t b = kept[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b});
    const std::int64_t rows = b * s_;
    release_all_but(stash, {kNormed, kProbs});
    const float* g = grad_output.data();
    Tensor row_scale = Tensor::uninitialized({rows});
    for (std::int64_t r = 0; r < rows; ++r) row_scale.data()[r] = g[r / s_] / static_cast<float>(s_);
    float* dlogits = kept[kProbs].data();
    cross_entropy_backward(rows, v_, dlogits, kept[kTargets].i32().data(), row_scale.data(),
                           dlogits);
    Tensor dnormed = Tensor::uninitialized({b, s_, h_});
    linear_backward_input({rows, h_, v_}, value(kWu), dlogits, dnormed.data());
    Tensor dx({b, s_, h_});  // zeroed: the RMSNorm backward adds into it
    rmsnorm_backward(rows, h_, kept[kX].data(), kept[kRstd].data(), value(kGamma), dnormed.data(),
                     dx.data(), grad(kGamma));

    start_weight_stash(weight_stash);
    weight_stash.tensors[weight_kept::kNormed] = std::move(kept[kNormed]);
    weight_stash.tensors[weight_kept::kDLogits] = std::move(kept[kProbs]);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    expect_weight_stash(spec_, weight_stash, weight_kept::kCount);
    const auto& w = weight_stash.tensors;
    const std::int64_t rows = w[weight_kept::kNormed].dim(0) * s_;
    linear_backward_weight({rows, h_, v_}, w[weight_kept::kNormed].data(),
                           w[weight_kept::kDLogits].data(), grad(kWu), nullptr);
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
  std::int64_t v_;
};

}  // namespace

std::unique_ptr<Layer> make_rms_head(const models::Model& model, const models::Layer& spec,
                                     NormalInit& init) {
  return std::make_unique<RmsHead>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
