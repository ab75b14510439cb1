// The mse_loss layer: per-sample loss = mean_j (x_j - t_j)^2 (models/model.hpp).
#include <cstddef>

#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::mse_loss;

class MseLoss final : public KindLayer {
 public:
  MseLoss(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init), h_(model.hidden) {}

  Tensor forward(Tensor input, const Tensor* target, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b = expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, h_});
    expect_tensor(spec_, "target", expect_target(spec_, target), ElementType::f32, {b, h_});
    input.charge_to(account);
    Tensor kept_target = target->clone(account);
    Tensor loss({b});
    const float* x = input.data();
    const float* t = kept_target.data();
    float* out = loss.data();
    for (std::int64_t n = 0; n < b; ++n) {
      double sum = 0.0;
      for (std::int64_t j = n * h_; j < (n + 1) * h_; ++j) {
        const double e = static_cast<double>(x[j]) - t[j];
        sum += e * e;
      }
      out[n] = static_cast<float>(sum / static_cast<double>(h_));
    }
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(kept_target));
    return loss;
  }

  // No parameters: I is the whole backward, W keeps nothing.
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* /*weight_account*/) override {
    expect_stash(spec_, stash, kKeptCount);
    start_weight_stash(weight_stash);
    const Tensor& x = stash.tensors[kX];
    const Tensor& t = stash.tensors[kTarget];
    const std::int64_t b = x.dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b});
    Tensor dx({b, h_});
    const float* xv = x.data();
    const float* tv = t.data();
    const float* g = grad_output.data();
    float* d = dx.data();
    for (std::int64_t n = 0; n < b; ++n) {
      const float scale = 2.0F * g[n] / static_cast<float>(h_);
      for (std::int64_t j = n * h_; j < (n + 1) * h_; ++j) d[j] = scale * (xv[j] - tv[j]);
    }
    return dx;
  }

 private:
  std::int64_t h_;
};

}  // namespace

std::unique_ptr<Layer> make_mse_loss(const models::Model& model, const models::Layer& spec,
                                     NormalInit& init) {
  return std::make_unique<MseLoss>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
