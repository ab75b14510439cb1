// The dit_embed layer on the GPU (models/model.hpp), DiT's input side: the
// patches' embedding (one Linear per patch) plus a position table, and the
// conditioning c = MLP(timestep features) + label embedding handed on as one
// more row: out [b, T+1, H]. The twin of exec/cpu/layers/dit_embed.cpp: the same
// parameters, the same 4 stash tensors, the per-sample GEMMs in the same order;
// no input gradient (the input is data).
//
// A sample's timestep and label are the last two floats of its input row,
// read on the device. The labels are not checked here (that would wait for
// the stream; see exec/cuda/kernels/dit_condition.hpp): whoever makes them on
// the host checks them there, as the CPU layer does.
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::dit_embed;

// DiT's TimestepEmbedder: max_period 10000.
constexpr double kMaxPeriod = 10000.0;

class DitEmbed final : public KindLayer {
 public:
  DitEmbed(const models::Model& model, const models::Layer& spec, Parameters parameters,
           const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        t_(model.seq),
        p_(static_cast<std::int64_t>(model.patch) * model.patch * model.channels),
        width_(t_ * p_ + 2) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* /*target*/, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b =
        expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, width_});
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kFreq; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* x = at(kInput);

    DeviceTensor out = scratch(context, {b, t_ + 1, h_});
    for (std::int64_t n = 0; n < b; ++n) {
      linear_forward(blas, t_, p_, h_, x + n * width_, value(kPatchW), value(kPatchB),
                     out.f32() + n * (t_ + 1) * h_, stream, value(kPos));
    }
    timestep_embedding(b, x + t_ * p_, width_, models::kTimestepFeatures, kMaxPeriod, at(kFreq),
                       stream);
    linear_forward(blas, b, models::kTimestepFeatures, h_, at(kFreq), value(kT1), value(kT1b),
                   at(kTPre), stream);
    silu_forward(b * h_, at(kTPre), at(kTAct), stream);
    DeviceTensor c = scratch(context, {b, h_});
    linear_forward(blas, b, h_, h_, at(kTAct), value(kT2), value(kT2b), c.f32(), stream);
    label_rows_forward(label_rows(b), x + t_ * p_ + 1, value(kLabels), c.f32(),
                       out.f32() + t_ * h_, stream);
    return out;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kInput].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, t_ + 1, h_});
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* x = at(kInput);
    const float* dy = grad_output.f32();

    for (std::int64_t n = 0; n < b; ++n) {
      const float* dtokens = dy + n * (t_ + 1) * h_;
      linear_backward_weight(blas, t_, p_, h_, x + n * width_, dtokens, grad(kPatchW),
                             grad(kPatchB), stream);
      residual_add(t_ * h_, grad(kPos), dtokens, grad(kPos), stream);
    }
    // Row T of each sample is c + its label's row: both get its gradient.
    label_rows_backward(label_rows(b), x + t_ * p_ + 1, dy + t_ * h_, grad(kLabels), stream);
    DeviceTensor dc = scratch(context, {b, h_});
    copy_rows(dc.f32(), h_, dy + t_ * h_, (t_ + 1) * h_, h_, b, stream);
    linear_backward_weight(blas, b, h_, h_, at(kTAct), dc.f32(), grad(kT2), grad(kT2b), stream);
    DeviceTensor dact = scratch(context, {b, h_});
    linear_backward_input(blas, b, h_, h_, value(kT2), dc.f32(), dact.f32(), stream);
    silu_backward(b * h_, at(kTPre), dact.f32(), dact.f32(), stream);
    linear_backward_weight(blas, b, models::kTimestepFeatures, h_, at(kFreq), dact.f32(),
                           grad(kT1), grad(kT1b), stream);
    return {};
  }

 private:
  // Sample n's label at input row n's last float; its row of out at row T of sample n.
  [[nodiscard]] LabelRows label_rows(std::int64_t b) const {
    return {.batch = b, .hidden = h_, .label_stride = width_, .row_stride = (t_ + 1) * h_};
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t p_;
  std::int64_t width_;  // one sample's input: T patches of P*P*C, its timestep and its label
};

}  // namespace

std::unique_ptr<DeviceLayer> make_dit_embed(const models::Model& model, const models::Layer& spec,
                                            Parameters parameters, const LayerContext& context) {
  return std::make_unique<DitEmbed>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
