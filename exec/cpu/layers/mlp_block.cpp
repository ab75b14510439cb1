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
    Tensor y({b, h_});
    layernorm_forward(b, h_, input.data(), value(kGamma), value(kBeta), normed.data(),
                      stats.data());
    linear_forward({b, h_, f_}, normed.data(), value(kW1), value(kC1), pre.data());
    gelu_forward(b * f_, pre.data(), act.data());
    linear_forward({b, f_, h_}, act.data(), value(kW2), value(kC2), y.data());
    const float* x = input.data();
    float* out = y.data();
    for (std::int64_t i = 0; i < b * h_; ++i) out[i] += x[i];  // the residual

    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(normed));
    stash.tensors.push_back(std::move(stats));
    stash.tensors.push_back(std::move(pre));
    stash.tensors.push_back(std::move(act));
    return y;
  }

  Tensor backward(Stash stash, const Tensor& grad_output) override {
    expect_stash(spec_, stash, kKeptCount);
    auto& kept = stash.tensors;
    const std::int64_t b = kept[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, h_});
    Tensor dact({b, f_});
    linear_backward({b, f_, h_}, kept[kGelu].data(), value(kW2), grad_output.data(), dact.data(),
                    grad(kW2), grad(kC2));
    gelu_backward(b * f_, kept[kPreGelu].data(), dact.data(), dact.data());
    Tensor dnormed({b, h_});
    linear_backward({b, h_, f_}, kept[kNormed].data(), value(kW1), dact.data(), dnormed.data(),
                    grad(kW1), grad(kC1));
    Tensor dx = grad_output.clone();  // the residual's share; LayerNorm adds its own
    layernorm_backward(b, h_, kept[kX].data(), kept[kStats].data(), value(kGamma), dnormed.data(),
                       dx.data(), grad(kGamma), grad(kBeta));
    return dx;
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
