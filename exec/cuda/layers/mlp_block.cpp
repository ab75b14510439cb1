// The mlp_block layer on the GPU: y = x + W2 gelu(W1 LN(x) + c1) + c2, the
// twin of exec/cpu/layers/mlp_block.cpp (same parameters, stash and order).
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::mlp_block;

class MlpBlock final : public KindLayer {
 public:
  MlpBlock(const models::Model& model, const models::Layer& spec, Parameters parameters,
           const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        f_(spec.ffn_width) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* /*target*/, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b = expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, h_});
    input.charge_to(account);
    DeviceTensor normed = kept(kNormed, b, account);
    DeviceTensor stats = kept(kStats, b, account);
    DeviceTensor pre = kept(kPreGelu, b, account);
    DeviceTensor act = kept(kGelu, b, account);
    DeviceTensor y = scratch(context, {b, h_});
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    layernorm_forward(b, h_, input.f32(), value(kGamma), value(kBeta), normed.f32(), stats.f32(),
                      stream);
    linear_forward(blas, b, h_, f_, normed.f32(), value(kW1), value(kC1), pre.f32(), stream);
    gelu_forward(b * f_, pre.f32(), act.f32(), stream);
    linear_forward(blas, b, f_, h_, act.f32(), value(kW2), value(kC2), y.f32(), stream);
    residual_add(b * h_, y.f32(), input.f32(), y.f32(), stream);

    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(normed));
    stash.tensors.push_back(std::move(stats));
    stash.tensors.push_back(std::move(pre));
    stash.tensors.push_back(std::move(act));
    return y;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    auto& saved = stash.tensors;
    const std::int64_t b = saved[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, h_});
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    DeviceTensor dact = scratch(context, {b, f_});
    linear_backward(blas, b, f_, h_, saved[kGelu].f32(), value(kW2), grad_output.f32(),
                    dact.f32(), grad(kW2), grad(kC2), stream);
    gelu_backward(b * f_, saved[kPreGelu].f32(), dact.f32(), dact.f32(), stream);
    DeviceTensor dnormed = scratch(context, {b, h_});
    linear_backward(blas, b, h_, f_, saved[kNormed].f32(), value(kW1), dact.f32(), dnormed.f32(),
                    grad(kW1), grad(kC1), stream);
    // The residual's share; LayerNorm adds its own.
    DeviceTensor dx = scratch(context, {b, h_});
    copy_device(dx.raw(), grad_output.raw(), grad_output.bytes(), stream);
    layernorm_backward(b, h_, saved[kX].f32(), saved[kStats].f32(), value(kGamma), dnormed.f32(),
                       dx.f32(), grad(kGamma), grad(kBeta), stream);
    return dx;
  }

 private:
  std::int64_t h_;
  std::int64_t f_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_mlp_block(const models::Model& model, const models::Layer& spec,
                                            Parameters parameters, const LayerContext& context) {
  return std::make_unique<MlpBlock>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
