// The transformer_block layer on the GPU, GPT-2 pre-LN (models/model.hpp):
//   a = x + Wo attn(LN1(x)) + bo,   y = a + W2 gelu(W1 LN2(a) + b1) + b2,
// the twin of exec/cpu/layers/transformer_block.cpp: same parameters, the same 11
// stash tensors in the same order, the same steps. Attention is naive, as
// strided-batched GEMMs over head-major copies (exec/cuda/kernels/attention.hpp)
// keeping P, or flash, keeping its log-sum-exp in the same slot, as the model's
// attn= says; either's scratch is a temporary, charged to no account.
#include <fmt/format.h>

#include <cstddef>

#include "base/error.hpp"
#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::transformer_block;

class TransformerBlock final : public KindLayer {
 public:
  TransformerBlock(const models::Model& model, const models::Layer& spec, Parameters parameters,
                   const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        s_(model.seq),
        a_(model.heads),
        f_(spec.ffn_width),
        flash_(model.attention == models::Attention::flash) {
    if (a_ < 1 || h_ % a_ != 0 || f_ < 1) {
      throw InputError(fmt::format(
          "layer {} ({}): hidden {} is not split evenly by heads {} or ffn width {} < 1", spec.name,
          spec.kind, h_, a_, f_));
    }
  }

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* /*target*/, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b =
        expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, s_, h_});
    const std::int64_t rows = b * s_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kNormed1; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto saved = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const AttentionDims dims{b, s_, h_, a_};
    DeviceTensor y = scratch(context, {b, s_, h_});

    layernorm_forward(rows, h_, saved(kX), value(kGamma1), value(kBeta1), saved(kNormed1),
                      saved(kStats1), stream);
    linear_forward(blas, rows, h_, 3 * h_, saved(kNormed1), value(kWqkv), value(kBqkv),
                   saved(kQkv), stream);
    if (flash_) {
      flash_attention_forward(dims, saved(kQkv), saved(kAttn), saved(kProbs), stream);
    } else {
      DeviceTensor attention_scratch = scratch(context, {attention_forward_scratch_floats(dims)});
      attention_forward(blas, dims, saved(kQkv), saved(kProbs), saved(kAttn),
                        attention_scratch.f32(), stream);
    }
    linear_forward(blas, rows, h_, h_, saved(kAttn), value(kWo), value(kBo), saved(kA), stream);
    residual_add(rows * h_, saved(kA), saved(kX), saved(kA), stream);
    layernorm_forward(rows, h_, saved(kA), value(kGamma2), value(kBeta2), saved(kNormed2),
                      saved(kStats2), stream);
    linear_forward(blas, rows, h_, f_, saved(kNormed2), value(kW1), value(kB1), saved(kPreGelu),
                   stream);
    gelu_forward(rows * f_, saved(kPreGelu), saved(kGelu), stream);
    linear_forward(blas, rows, f_, h_, saved(kGelu), value(kW2), value(kB2), y.f32(), stream);
    residual_add(rows * h_, y.f32(), saved(kA), y.f32(), stream);
    return y;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, s_, h_});
    const std::int64_t rows = b * s_;
    auto saved = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* dy = grad_output.f32();

    // MLP branch, then LN2: da = dy + LN2'(W1'(gelu'(W2'(dy)))).
    DeviceTensor dact = scratch(context, {b, s_, f_});
    linear_backward(blas, rows, f_, h_, saved(kGelu), value(kW2), dy, dact.f32(), grad(kW2),
                    grad(kB2), stream);
    gelu_backward(rows * f_, saved(kPreGelu), dact.f32(), dact.f32(), stream);
    DeviceTensor dh = scratch(context, {b, s_, h_});  // reused by each step below in turn
    linear_backward(blas, rows, h_, f_, saved(kNormed2), value(kW1), dact.f32(), dh.f32(),
                    grad(kW1), grad(kB1), stream);
    DeviceTensor da = scratch(context, {b, s_, h_});
    copy_device(da.raw(), grad_output.raw(), grad_output.bytes(), stream);
    layernorm_backward(rows, h_, saved(kA), saved(kStats2), value(kGamma2), dh.f32(), da.f32(),
                       grad(kGamma2), grad(kBeta2), stream);

    // Attention branch, then LN1: dx = da + LN1'(Wqkv'(attn'(Wo'(da)))).
    linear_backward(blas, rows, h_, h_, saved(kAttn), value(kWo), da.f32(), dh.f32(), grad(kWo),
                    grad(kBo), stream);
    const AttentionDims dims{b, s_, h_, a_};
    DeviceTensor dqkv = scratch(context, {b, s_, 3 * h_});
    if (flash_) {
      DeviceTensor flash_scratch = scratch(context, {flash_attention_backward_scratch_floats(dims)});
      flash_attention_backward(dims, saved(kQkv), saved(kAttn), saved(kProbs), dh.f32(),
                               dqkv.f32(), flash_scratch.f32(), stream);
    } else {
      DeviceTensor attention_scratch =
          scratch(context, {attention_backward_scratch_floats(dims)});
      attention_backward(blas, dims, saved(kQkv), saved(kProbs), dh.f32(), dqkv.f32(),
                         attention_scratch.f32(), stream);
    }
    linear_backward(blas, rows, h_, 3 * h_, saved(kNormed1), value(kWqkv), dqkv.f32(), dh.f32(),
                    grad(kWqkv), grad(kBqkv), stream);
    DeviceTensor dx = std::move(da);  // the residual's share; LN1 adds its own
    layernorm_backward(rows, h_, saved(kX), saved(kStats1), value(kGamma1), dh.f32(), dx.f32(),
                       grad(kGamma1), grad(kBeta1), stream);
    return dx;
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
  std::int64_t a_;
  std::int64_t f_;
  bool flash_;  // attn=flash: the kProbs slot holds the log-sum-exp [A, S]
};

}  // namespace

std::unique_ptr<DeviceLayer> make_transformer_block(const models::Model& model,
                                                    const models::Layer& spec,
                                                    Parameters parameters,
                                                    const LayerContext& context) {
  return std::make_unique<TransformerBlock>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
