// The dit_head layer on the GPU (models/model.hpp), DiT's FinalLayer and its loss:
//   (shift, scale) = Wada SiLU(c) + bada
//   prediction = W (LN(x) (1 + scale) + shift) + b        [T, P*P*2C]
//   per-sample loss = mean over the prediction's elements of (prediction - target)^2
// the twin of exec/cpu/layers/dit_head.cpp: a LayerNorm without affine, the
// same parameters, the same 7 stash tensors in the same order (a copy of the
// target last), the loss summed in double as the CPU does (mse_forward).
// x is [b, T+1, H], the tokens and c (dit_rows.hpp).
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/dit_rows.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::dit_head;

class DitHead final : public KindLayer {
 public:
  DitHead(const models::Model& model, const models::Layer& spec, Parameters parameters,
          const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        t_(model.seq),
        o_(static_cast<std::int64_t>(model.patch) * model.patch * 2 * model.channels) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* target, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b =
        expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, t_ + 1, h_});
    const DeviceTensor& t = expect_target(spec_, target);
    expect_tensor(spec_, "target", t, DeviceType::f32, {b, t_, o_});
    const std::int64_t rows = b * t_;
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kSiluC; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    copy_device(at(kTarget), t.raw(), t.bytes(), stream);

    DeviceTensor cond = parts(b).c_of(context, at(kX));
    silu_forward(b * h_, cond.f32(), at(kSiluC), stream);
    linear_forward(blas, b, h_, 2 * h_, at(kSiluC), value(kAdaW), value(kAdaB), at(kMod), stream);
    DeviceTensor tokens = parts(b).tokens_of(context, at(kX));
    DeviceTensor xhat = scratch(context, {b, t_, h_});
    layernorm_forward(rows, h_, tokens.f32(), nullptr, nullptr, xhat.f32(), at(kStats), stream);
    modulate_forward(modulation(b), xhat.f32(), at(kMod), at(kMod) + h_, at(kModulated), stream);
    linear_forward(blas, rows, h_, o_, at(kModulated), value(kW), value(kB), at(kOut), stream);
    DeviceTensor loss = scratch(context, {b});
    mse_forward(b, t_ * o_, at(kOut), at(kTarget), loss.f32(), stream);
    return loss;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b});
    const std::int64_t rows = b * t_;
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;

    DeviceTensor dout = scratch(context, {b, t_, o_});
    mse_backward(b, t_ * o_, at(kOut), at(kTarget), grad_output.f32(), dout.f32(), stream);
    DeviceTensor dmod = scratch(context, {b, 2 * h_});
    dmod.zero(*context.stream);  // the modulation's backward adds into it
    DeviceTensor dm = scratch(context, {b, t_, h_});
    linear_backward_input(blas, rows, h_, o_, value(kW), dout.f32(), dm.f32(), stream);
    // LN(x) again, as the forward made it (the stash keeps its statistics only).
    DeviceTensor tokens = parts(b).tokens_of(context, at(kX));
    DeviceTensor xhat = scratch(context, {b, t_, h_});
    DeviceTensor stats = scratch(context, {b, t_, 2});
    layernorm_forward(rows, h_, tokens.f32(), nullptr, nullptr, xhat.f32(), stats.f32(), stream);
    modulate_backward(modulation(b), xhat.f32(), at(kMod) + h_, dm.f32(), dm.f32(), dmod.f32(),
                      dmod.f32() + h_, stream);
    DeviceTensor dsilu = scratch(context, {b, h_});
    linear_backward_input(blas, b, h_, 2 * h_, value(kAdaW), dmod.f32(), dsilu.f32(), stream);
    // dx's tokens: LN's gradient (it adds: start from zero); its c rows: SiLU's.
    DeviceTensor dtokens = scratch(context, {b, t_, h_});
    dtokens.zero(*context.stream);
    layernorm_backward(rows, h_, tokens.f32(), at(kStats), nullptr, dm.f32(), dtokens.f32(),
                       nullptr, nullptr, stream);
    DeviceTensor cond = parts(b).c_of(context, at(kX));
    silu_backward(b * h_, cond.f32(), dsilu.f32(), dsilu.f32(), stream);
    DeviceTensor dx = parts(b).join(context, dtokens.f32(), dsilu.f32());

    // The CPU's W.
    linear_backward_weight(blas, rows, h_, o_, at(kModulated), dout.f32(), grad(kW), grad(kB),
                           stream);
    linear_backward_weight(blas, b, h_, 2 * h_, at(kSiluC), dmod.f32(), grad(kAdaW), grad(kAdaB),
                           stream);
    return dx;
  }

 private:
  [[nodiscard]] DitRows parts(std::int64_t b) const {
    return {.batch = b, .tokens = t_, .hidden = h_};
  }
  [[nodiscard]] ModulationShape modulation(std::int64_t b) const {
    return {.batch = b, .tokens = t_, .hidden = h_, .mod_stride = 2 * h_};
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t o_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_dit_head(const models::Model& model, const models::Layer& spec,
                                           Parameters parameters, const LayerContext& context) {
  return std::make_unique<DitHead>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
