// The llama_block layer on the GPU (models/model.hpp), Llama's pre-norm block:
//   a = x + Wo attn(rope(Wqkv RMSNorm1(x))),  y = a + W2 (silu(W1 n2) * (W3 n2)), n2 = RMSNorm2(a)
// the twin of exec/cpu/layers/llama_block.cpp: no biases, grouped-query causal
// attention (A query heads sharing G kv heads), the rotary embedding on q and k
// inside the packed qkv, the attention flash (keeping the log-sum-exp) or
// naive (keeping P) as the model says; the same parameters, the same 12 stash
// tensors in the same order, the same steps, the backward running the CPU's
// I then its W. Attention's scratch is a temporary, charged to no account.
#include <fmt/format.h>

#include <cstddef>

#include "base/error.hpp"
#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::llama_block;

class LlamaBlock final : public KindLayer {
 public:
  LlamaBlock(const models::Model& model, const models::Layer& spec, Parameters parameters,
             const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context),
        h_(model.hidden),
        s_(model.seq),
        a_(model.heads),
        g_(model.kv_heads),
        f_(spec.ffn_width),
        theta_(static_cast<double>(model.rope_theta)),
        flash_(model.attention == models::Attention::flash) {
    if (a_ < 1 || g_ < 1 || h_ % a_ != 0 || a_ % g_ != 0 || (h_ / a_) % 2 != 0 || f_ < 1) {
      throw InputError(fmt::format(
          "layer {} ({}): hidden {}, heads {}, kv_heads {} and ffn width {} do not make a block "
          "(heads must split hidden into even head widths, kv_heads must divide heads)",
          spec.name, spec.kind, h_, a_, g_, f_));
    }
    d_ = h_ / a_;
    qkv_ = (a_ + 2 * g_) * d_;
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
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    DeviceTensor y = scratch(context, {b, s_, h_});

    rmsnorm_forward(rows, h_, at(kX), value(kNorm1), at(kNormed1), at(kRstd1), stream);
    linear_forward(blas, rows, h_, qkv_, at(kNormed1), value(kWqkv), nullptr, at(kQkv), stream);
    rotate(b, at(kQkv), /*inverse=*/false);
    const AttentionDims dims = attention_dims(b);
    if (flash_) {
      flash_attention_forward(dims, at(kQkv), at(kAttn), at(kScores), stream);
    } else {
      DeviceTensor attention_scratch = scratch(context, {attention_forward_scratch_floats(dims)});
      attention_forward(blas, dims, at(kQkv), at(kScores), at(kAttn), attention_scratch.f32(),
                        stream);
    }
    linear_forward(blas, rows, h_, h_, at(kAttn), value(kWo), nullptr, at(kA), stream, at(kX));
    rmsnorm_forward(rows, h_, at(kA), value(kNorm2), at(kNormed2), at(kRstd2), stream);
    linear_forward(blas, rows, h_, f_, at(kNormed2), value(kW1), nullptr, at(kGate), stream);
    linear_forward(blas, rows, h_, f_, at(kNormed2), value(kW3), nullptr, at(kUp), stream);
    swiglu_forward(rows * f_, at(kGate), at(kUp), at(kH), stream);
    linear_forward(blas, rows, f_, h_, at(kH), value(kW2), nullptr, y.f32(), stream, at(kA));
    return y;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const std::int64_t b = stash.tensors[kX].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, s_, h_});
    const std::int64_t rows = b * s_;
    auto at = [&](Kept k) { return stash.tensors[k].f32(); };
    const RawStream stream = raw(context);
    BlasHandle& blas = *context.blas;
    const float* dy = grad_output.f32();

    // Feed-forward, then norm2: da = dy + norm2'(W1'(d gate) + W3'(d up)); the
    // gate's and up's gradients take their stash tensors' storage, as on the CPU.
    DeviceTensor dh = scratch(context, {b, s_, f_});
    linear_backward_input(blas, rows, f_, h_, value(kW2), dy, dh.f32(), stream);
    swiglu_backward(rows * f_, at(kGate), at(kUp), dh.f32(), at(kGate), at(kUp), stream);
    DeviceTensor dn = scratch(context, {b, s_, h_});  // reused below for each [rows, H] gradient
    linear_backward_input(blas, rows, h_, f_, value(kW1), at(kGate), dn.f32(), stream);
    linear_backward_input(blas, rows, h_, f_, value(kW3), at(kUp), dn.f32(), stream,
                          /*accumulate=*/true);
    DeviceTensor da = scratch(context, {b, s_, h_});
    copy_device(da.raw(), grad_output.raw(), grad_output.bytes(), stream);
    rmsnorm_backward(rows, h_, at(kA), at(kRstd2), value(kNorm2), dn.f32(), da.f32(),
                     grad(kNorm2), stream);

    // Attention, then norm1: dx = da + norm1'(Wqkv'(rope'(attn'(Wo'(da))))).
    linear_backward_input(blas, rows, h_, h_, value(kWo), da.f32(), dn.f32(), stream);
    const AttentionDims dims = attention_dims(b);
    DeviceTensor dqkv = scratch(context, {b, s_, qkv_});
    if (flash_) {
      DeviceTensor flash_scratch = scratch(context, {flash_attention_backward_scratch_floats(dims)});
      flash_attention_backward(dims, at(kQkv), at(kAttn), at(kScores), dn.f32(), dqkv.f32(),
                               flash_scratch.f32(), stream);
    } else {
      DeviceTensor attention_scratch = scratch(context, {attention_backward_scratch_floats(dims)});
      attention_backward(blas, dims, at(kQkv), at(kScores), dn.f32(), dqkv.f32(),
                         attention_scratch.f32(), stream);
    }
    rotate(b, dqkv.f32(), /*inverse=*/true);
    linear_backward_input(blas, rows, h_, qkv_, value(kWqkv), dqkv.f32(), dn.f32(), stream);
    DeviceTensor dx = scratch(context, {b, s_, h_});  // the residual's share; norm1 adds its own
    copy_device(dx.raw(), da.raw(), da.bytes(), stream);
    rmsnorm_backward(rows, h_, at(kX), at(kRstd1), value(kNorm1), dn.f32(), dx.f32(),
                     grad(kNorm1), stream);

    // The CPU's W: each Linear's weight gradient from its input and output gradient.
    linear_backward_weight(blas, rows, f_, h_, at(kH), dy, grad(kW2), nullptr, stream);
    linear_backward_weight(blas, rows, h_, f_, at(kNormed2), at(kGate), grad(kW1), nullptr, stream);
    linear_backward_weight(blas, rows, h_, f_, at(kNormed2), at(kUp), grad(kW3), nullptr, stream);
    linear_backward_weight(blas, rows, h_, h_, at(kAttn), da.f32(), grad(kWo), nullptr, stream);
    linear_backward_weight(blas, rows, h_, qkv_, at(kNormed1), dqkv.f32(), grad(kWqkv), nullptr,
                           stream);
    return dx;
  }

 private:
  [[nodiscard]] AttentionDims attention_dims(std::int64_t b) const {
    return {.batch = b, .seq = s_, .hidden = h_, .heads = a_, .kv_heads = g_, .causal = true};
  }

  // The rotary embedding of q's A heads and k's G heads in a packed qkv
  // [b, S, (A+2G)d] (forward), or its inverse on their gradients.
  void rotate(std::int64_t b, float* qkv, bool inverse) const {
    const RopeShape q{.batch = b, .seq = s_, .heads = a_, .head_dim = d_, .row_stride = qkv_,
                      .theta = theta_};
    RopeShape k = q;
    k.heads = g_;
    const RawStream stream = raw(context_);
    if (inverse) {
      rope_backward(q, qkv, stream);
      rope_backward(k, qkv + a_ * d_, stream);
    } else {
      rope_forward(q, qkv, stream);
      rope_forward(k, qkv + a_ * d_, stream);
    }
  }

  std::int64_t h_;
  std::int64_t s_;
  std::int64_t a_;
  std::int64_t g_;
  std::int64_t f_;
  double theta_;
  bool flash_;
  std::int64_t d_ = 0;
  std::int64_t qkv_ = 0;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_llama_block(const models::Model& model, const models::Layer& spec,
                                              Parameters parameters, const LayerContext& context) {
  return std::make_unique<LlamaBlock>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
