// The rms_head layer on the GPU (llama; models/model.hpp): logits =
// RMSNorm(x) Wu^T, Wu [V,H] with no bias; per-sample loss = the mean over the S
// positions of the cross-entropy against the next-token targets. The twin of
// exec/cpu/layers/rms_head.cpp, as lm_head.cpp is of the CPU's lm_head: the
// same stash in the same order (x, RMSNorm out, its rstd, probabilities, a
// copy of the targets), and the backward overwrites the stashed
// probabilities with the logits' gradient.
//
// Target ids are not range-checked here (they live on the device; see
// embedding.cpp): whoever makes them on the host checks them there.
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::rms_head;

class RmsHead final : public KindLayer {
 public:
  RmsHead(const models::Model& model, const models::Layer& spec, Parameters parameters,
          const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        s_(model.seq),
        v_(model.vocab) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* target, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b =
        expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, s_, h_});
    const DeviceTensor& t = expect_target(spec_, target);
    expect_tensor(spec_, "target", t, DeviceType::i32, {b, s_});
    const std::int64_t rows = b * s_;
    const RawStream stream = raw(context);
    input.charge_to(account);
    DeviceTensor normed = kept(kNormed, b, account);
    DeviceTensor rstd = kept(kRstd, b, account);
    DeviceTensor probs = kept(kProbs, b, account);
    DeviceTensor targets = kept(kTargets, b, account);
    copy_device(targets.raw(), t.raw(), t.bytes(), stream);

    rmsnorm_forward(rows, h_, input.f32(), value(kGamma), normed.f32(), rstd.f32(), stream);
    linear_forward(*context.blas, rows, h_, v_, normed.f32(), value(kWu), nullptr, probs.f32(),
                   stream);
    DeviceTensor row_loss = scratch(context, {rows});
    cross_entropy_forward(rows, v_, probs.f32(), targets.i32(), row_loss.f32(), stream);
    DeviceTensor loss = scratch(context, {b});
    position_mean(b, s_, row_loss.f32(), loss.f32(), stream);

    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    stash.tensors.push_back(std::move(normed));
    stash.tensors.push_back(std::move(rstd));
    stash.tensors.push_back(std::move(probs));
    stash.tensors.push_back(std::move(targets));
    return loss;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    auto& saved = stash.tensors;
    const std::int64_t b = saved[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b});
    const std::int64_t rows = b * s_;
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    // Each position's share of its sample's loss is 1/S of it.
    DeviceTensor row_scale = scratch(context, {rows});
    position_scale(b, s_, grad_output.f32(), row_scale.f32(), stream);
    // The stash is ours now: the logits' gradient overwrites the probabilities.
    float* dlogits = saved[kProbs].f32();
    cross_entropy_backward(rows, v_, dlogits, saved[kTargets].i32(), row_scale.f32(), dlogits,
                           stream);
    DeviceTensor dnormed = scratch(context, {b, s_, h_});
    linear_backward(blas, rows, h_, v_, saved[kNormed].f32(), value(kWu), dlogits, dnormed.f32(),
                    grad(kWu), nullptr, stream);
    // rmsnorm_backward adds into dx: start from zero.
    DeviceTensor dx = scratch(context, {b, s_, h_});
    dx.zero(*context.stream);
    rmsnorm_backward(rows, h_, saved[kX].f32(), saved[kRstd].f32(), value(kGamma), dnormed.f32(),
                     dx.f32(), grad(kGamma), stream);
    return dx;
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
  std::int64_t v_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_rms_head(const models::Model& model, const models::Layer& spec,
                                           Parameters parameters, const LayerContext& context) {
  return std::make_unique<RmsHead>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
