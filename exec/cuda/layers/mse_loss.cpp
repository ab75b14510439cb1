// The mse_loss layer on the GPU: per-sample loss = mean_j (x_j - t_j)^2, the
// twin of exec/cpu/layers/mse_loss.cpp (stash: x, a copy of the target).
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::mse_loss;

class MseLoss final : public KindLayer {
 public:
  MseLoss(const models::Model& model, const models::Layer& spec, Parameters parameters,
          const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context), h_(model.hidden) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* target, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b = expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, h_});
    const DeviceTensor& t = expect_target(spec_, target);
    expect_tensor(spec_, "target", t, DeviceType::f32, {b, h_});
    const RawStream stream = raw(context);
    input.charge_to(account);
    DeviceTensor kept_target = kept(kTarget, b, account);
    copy_device(kept_target.raw(), t.raw(), t.bytes(), stream);
    DeviceTensor loss = scratch(context, {b});
    mse_forward(b, h_, input.f32(), kept_target.f32(), loss.f32(), stream);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(kept_target));
    return loss;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const DeviceTensor& x = stash.tensors[kX];
    const std::int64_t b = x.dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b});
    DeviceTensor dx = scratch(context, {b, h_});
    mse_backward(b, h_, x.f32(), stash.tensors[kTarget].f32(), grad_output.f32(), dx.f32(),
                 raw(context));
    return dx;
  }

 private:
  std::int64_t h_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_mse_loss(const models::Model& model, const models::Layer& spec,
                                           Parameters parameters, const LayerContext& context) {
  return std::make_unique<MseLoss>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
