// The mlp_block layer: y = x + W2 gelu(W1 LN(x) + c1) + c2 (models/model.hpp).
#include <cstddef>

#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/gelu.hpp"
#include "exec/cpu/ops/layernorm.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::mlp_block;

class MlpBlock final : public KindLayer {
 public:
  MlpBlock(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init), h_(model.hidden), f_(spec.ffn_width) {}

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b = expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, h_});
    input.charge_to(account);
    Tensor normed = kept(kNormed, b, account);
    Tensor stats = kept(kStats, b, account);
    Tensor pre = kept(kPreGelu, b, account);
    Tensor act = kept(kGelu, b, account);
    Tensor y = Tensor::uninitialized({b, h_});
    layernorm_forward(b, h_, input.data(), value(kGamma), value(kBeta), normed.data(),
                      stats.data());
    linear_forward({b, h_, f_}, normed.data(), value(kW1), value(kC1), pre.data());
    gelu_forward(b * f_, pre.data(), act.data());
    linear_forward({b, f_, h_}, act.data(), value(kW2), value(kC2), y.data(), input.data());  // + the residual

    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(normed));
    stash.tensors.push_back(std::move(stats));
    stash.tensors.push_back(std::move(pre));
    stash.tensors.push_back(std::move(act));
    return y;
  }

  // I: the input gradient, and LayerNorm's gamma and beta; W keeps each
  // Linear's input and output gradient (d pre-GELU in pre-GELU's storage).
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* weight_account) override {
    expect_stash(spec_, stash, kKeptCount);
    auto& kept = stash.tensors;
    const std::int64_t b = kept[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, h_});
    release_all_but(stash, {kNormed, kPreGelu, kGelu});
    Tensor dy = grad_output.clone(weight_account);
    Tensor dact = Tensor::uninitialized({b, f_});
    linear_backward_input({b, f_, h_}, value(kW2), dy.data(), dact.data());
    Tensor& dpre = kept[kPreGelu];
    gelu_backward(b * f_, dpre.data(), dact.data(), dpre.data());
    Tensor dnormed = Tensor::uninitialized({b, h_});
    linear_backward_input({b, h_, f_}, value(kW1), dpre.data(), dnormed.data());
    Tensor dx = grad_output.clone();  // the residual's share; LayerNorm adds its own
    layernorm_backward(b, h_, kept[kX].data(), kept[kStats].data(), value(kGamma), dnormed.data(),
                       dx.data(), grad(kGamma), grad(kBeta));

    start_weight_stash(weight_stash);
    auto& w = weight_stash.tensors;
    w[weight_kept::kNormed] = std::move(kept[kNormed]);
    w[weight_kept::kDPreGelu] = std::move(dpre);
    w[weight_kept::kGelu] = std::move(kept[kGelu]);
    w[weight_kept::kDOut] = std::move(dy);
    return dx;
  }

  void backward_weight(Stash weight_stash) override {
    expect_weight_stash(spec_, weight_stash, weight_kept::kCount);
    auto& w = weight_stash.tensors;
    const std::int64_t b = w[weight_kept::kDOut].dim(0);
    linear_backward_weight({b, f_, h_}, w[weight_kept::kGelu].data(), w[weight_kept::kDOut].data(),
                           grad(kW2), grad(kC2));
    linear_backward_weight({b, h_, f_}, w[weight_kept::kNormed].data(),
                           w[weight_kept::kDPreGelu].data(), grad(kW1), grad(kC1));
  }

 private:
  std::int64_t h_;
  std::int64_t f_;
};

}  // namespace

std::unique_ptr<Layer> make_mlp_block(const models::Model& model, const models::Layer& spec,
                                      NormalInit& init) {
  return std::make_unique<MlpBlock>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
