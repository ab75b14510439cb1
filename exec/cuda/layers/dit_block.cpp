// The dit_block layer on the GPU (models/model.hpp), DiT's block with adaLN-Zero:
//   (shift1, scale1, gate1, shift2, scale2, gate2) = Wada SiLU(c) + bada
//   a = x + gate1 * Wo attn(Wqkv (LN(x) (1 + scale1) + shift1))
//   y = a + gate2 * W2 gelu(W1 (LN(a) (1 + scale2) + shift2))
// the twin of exec/cpu/layers/dit_block.cpp: LayerNorms without affine, biases
// on every Linear, attention over all tokens (no mask, flash or naive as the
// model says); the same parameters, the same 15 stash tensors in the same
// order, the backward running the CPU's I then its W. Input and output are
// [b, T+1, H], the tokens then the conditioning row c, which the block reads
// and hands on unchanged (dit_rows.hpp: packed copies of the two parts, where
// the CPU loops over samples).
#include <fmt/format.h>

#include <cstddef>

#include "base/error.hpp"
#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/dit_rows.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::dit_block;

// Offsets of the six modulation vectors in a sample's [6H] row, in DiT's order.
enum Mod : std::int64_t { kShift1, kScale1, kGate1, kShift2, kScale2, kGate2, kMods };

class DitBlock final : public KindLayer {
 public:
  DitBlock(const models::Model& model, const models::Layer& spec, Parameters parameters,
           const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        t_(model.seq),
        a_(model.heads),
        f_(spec.ffn_width),
        flash_(model.attention == models::Attention::flash) {
    if (a_ < 1 || h_ % a_ != 0 || f_ < 1) {
      throw InputError(fmt::format("layer {} ({}): hidden {} is not split evenly by heads {}",
                                   spec.name, spec.kind, h_, a_));
    }
    if (model.attention_cache) {
      throw InputError(fmt::format("layer {} ({}): dit's cache=1 (an attention cache over the previous chunk) "
                                   "runs on the CPU backend (gpipe-run infer), not yet on CUDA",
                                   spec.name, spec.kind));
    }
  }

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* /*target*/, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b =
        expect_tensor(spec_, "input", input, DeviceType::f32, {kAnyBatch, t_ + 1, h_});
    const std::int64_t rows = b * t_;
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kSiluC; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* mod = at(kMod);
    const ModulationShape shape = modulation(b);

    DeviceTensor cond = parts(b).c_of(context, at(kX));
    silu_forward(b * h_, cond.f32(), at(kSiluC), stream);
    linear_forward(blas, b, h_, kMods * h_, at(kSiluC), value(kAdaW), value(kAdaB), at(kMod),
                   stream);

    DeviceTensor tokens = parts(b).tokens_of(context, at(kX));
    DeviceTensor xhat = scratch(context, {b, t_, h_});
    layernorm_forward(rows, h_, tokens.f32(), nullptr, nullptr, xhat.f32(), at(kStats1), stream);
    modulate_forward(shape, xhat.f32(), mod + kShift1 * h_, mod + kScale1 * h_, at(kMod1), stream);
    linear_forward(blas, rows, h_, 3 * h_, at(kMod1), value(kWqkv), value(kBqkv), at(kQkv), stream);
    const AttentionDims dims = attention_dims(b);
    if (flash_) {
      flash_attention_forward(dims, at(kQkv), at(kAttn), at(kScores), stream);
    } else {
      DeviceTensor attention_scratch = scratch(context, {attention_forward_scratch_floats(dims)});
      attention_forward(blas, dims, at(kQkv), at(kScores), at(kAttn), attention_scratch.f32(),
                        stream);
    }
    linear_forward(blas, rows, h_, h_, at(kAttn), value(kWo), value(kBo), at(kO), stream);
    gated_residual_forward(shape, tokens.f32(), mod + kGate1 * h_, at(kO), at(kA), stream);
    layernorm_forward(rows, h_, at(kA), nullptr, nullptr, xhat.f32(), at(kStats2), stream);
    modulate_forward(shape, xhat.f32(), mod + kShift2 * h_, mod + kScale2 * h_, at(kMod2), stream);
    linear_forward(blas, rows, h_, f_, at(kMod2), value(kW1), value(kB1), at(kPreGelu), stream);
    gelu_forward(rows * f_, at(kPreGelu), at(kGelu), stream);
    linear_forward(blas, rows, f_, h_, at(kGelu), value(kW2), value(kB2), at(kF), stream);

    // y's tokens = a + gate2 * f (into the tokens' temporary, no longer read), its c row = x's.
    gated_residual_forward(shape, at(kA), mod + kGate2 * h_, at(kF), tokens.f32(), stream);
    return parts(b).join(context, tokens.f32(), cond.f32());
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, t_ + 1, h_});
    const std::int64_t rows = b * t_;
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* mod = at(kMod);
    const ModulationShape shape = modulation(b);
    DeviceTensor dmod = scratch(context, {b, kMods * h_});
    dmod.zero(*context.stream);  // the modulation's backwards add into it
    float* dmods = dmod.f32();  // the six vectors' gradients, strided as mod

    // MLP branch: y = a + gate2 * f; da starts as dy's tokens (the residual's share).
    DeviceTensor da = parts(b).tokens_of(context, grad_output.f32());
    DeviceTensor df = scratch(context, {b, t_, h_});
    gated_residual_backward(shape, at(kF), mod + kGate2 * h_, da.f32(), df.f32(),
                            dmods + kGate2 * h_, stream);
    DeviceTensor dpre = scratch(context, {b, t_, f_});
    linear_backward_input(blas, rows, f_, h_, value(kW2), df.f32(), dpre.f32(), stream);
    gelu_backward(rows * f_, at(kPreGelu), dpre.f32(), dpre.f32(), stream);
    DeviceTensor dm = scratch(context, {b, t_, h_});  // each modulated LN's gradient in turn
    linear_backward_input(blas, rows, h_, f_, value(kW1), dpre.f32(), dm.f32(), stream);
    // LN(a) again, as the forward made it (the stash keeps its statistics only).
    DeviceTensor xhat = scratch(context, {b, t_, h_});
    DeviceTensor stats = scratch(context, {b, t_, 2});
    layernorm_forward(rows, h_, at(kA), nullptr, nullptr, xhat.f32(), stats.f32(), stream);
    modulate_backward(shape, xhat.f32(), mod + kScale2 * h_, dm.f32(), dm.f32(),
                      dmods + kShift2 * h_, dmods + kScale2 * h_, stream);
    layernorm_backward(rows, h_, at(kA), at(kStats2), nullptr, dm.f32(), da.f32(), nullptr,
                       nullptr, stream);

    // Attention branch: a = x + gate1 * o.
    DeviceTensor d_o = scratch(context, {b, t_, h_});
    gated_residual_backward(shape, at(kO), mod + kGate1 * h_, da.f32(), d_o.f32(),
                            dmods + kGate1 * h_, stream);
    DeviceTensor dattn = scratch(context, {b, t_, h_});
    linear_backward_input(blas, rows, h_, h_, value(kWo), d_o.f32(), dattn.f32(), stream);
    const AttentionDims dims = attention_dims(b);
    DeviceTensor dqkv = scratch(context, {b, t_, 3 * h_});
    if (flash_) {
      DeviceTensor flash_scratch = scratch(context, {flash_attention_backward_scratch_floats(dims)});
      flash_attention_backward(dims, at(kQkv), at(kAttn), at(kScores), dattn.f32(), dqkv.f32(),
                               flash_scratch.f32(), stream);
    } else {
      DeviceTensor attention_scratch = scratch(context, {attention_backward_scratch_floats(dims)});
      attention_backward(blas, dims, at(kQkv), at(kScores), dattn.f32(), dqkv.f32(),
                         attention_scratch.f32(), stream);
    }
    linear_backward_input(blas, rows, h_, 3 * h_, value(kWqkv), dqkv.f32(), dm.f32(), stream);
    DeviceTensor tokens = parts(b).tokens_of(context, at(kX));
    layernorm_forward(rows, h_, tokens.f32(), nullptr, nullptr, xhat.f32(), stats.f32(), stream);
    modulate_backward(shape, xhat.f32(), mod + kScale1 * h_, dm.f32(), dm.f32(),
                      dmods + kShift1 * h_, dmods + kScale1 * h_, stream);

    // dx's tokens: da (the residual's share, no longer read) plus LN1's; its c
    // rows: dy's (c is handed on) plus what the modulation read of SiLU(c).
    layernorm_backward(rows, h_, tokens.f32(), at(kStats1), nullptr, dm.f32(), da.f32(), nullptr,
                       nullptr, stream);
    DeviceTensor dsilu = scratch(context, {b, h_});
    linear_backward_input(blas, b, h_, kMods * h_, value(kAdaW), dmods, dsilu.f32(), stream);
    DeviceTensor cond = parts(b).c_of(context, at(kX));
    silu_backward(b * h_, cond.f32(), dsilu.f32(), dsilu.f32(), stream);
    DeviceTensor dc = parts(b).c_of(context, grad_output.f32());
    residual_add(b * h_, dc.f32(), dsilu.f32(), dc.f32(), stream);
    DeviceTensor dx = parts(b).join(context, da.f32(), dc.f32());

    // The CPU's W: each Linear's weight gradient from its input and output gradient.
    linear_backward_weight(blas, rows, f_, h_, at(kGelu), df.f32(), grad(kW2), grad(kB2), stream);
    linear_backward_weight(blas, rows, h_, f_, at(kMod2), dpre.f32(), grad(kW1), grad(kB1), stream);
    linear_backward_weight(blas, rows, h_, h_, at(kAttn), d_o.f32(), grad(kWo), grad(kBo), stream);
    linear_backward_weight(blas, rows, h_, 3 * h_, at(kMod1), dqkv.f32(), grad(kWqkv), grad(kBqkv),
                           stream);
    linear_backward_weight(blas, b, h_, kMods * h_, at(kSiluC), dmods, grad(kAdaW), grad(kAdaB),
                           stream);
    return dx;
  }

 private:
  [[nodiscard]] AttentionDims attention_dims(std::int64_t b) const {
    return {.batch = b, .seq = t_, .hidden = h_, .heads = a_, .kv_heads = a_, .causal = false};
  }
  [[nodiscard]] DitRows parts(std::int64_t b) const {
    return {.batch = b, .tokens = t_, .hidden = h_};
  }
  [[nodiscard]] ModulationShape modulation(std::int64_t b) const {
    return {.batch = b, .tokens = t_, .hidden = h_, .mod_stride = kMods * h_};
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t a_;
  std::int64_t f_;
  bool flash_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_dit_block(const models::Model& model, const models::Layer& spec,
                                            Parameters parameters, const LayerContext& context) {
  return std::make_unique<DitBlock>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
