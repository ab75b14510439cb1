// The token_embedding layer on the GPU (llama): h[s] = tok[id[s]], the twin of
// exec/cpu/layers/token_embedding.cpp: the embedding's gather without a
// position table (the rotary embedding in each block places the tokens), a
// scatter-add backward (atomics: repeated ids may sum in another order than
// the CPU's), the ids its whole stash, no input gradient.
//
// The ids are not range-checked here (they live on the device; see
// embedding.cpp): whoever makes them on the host checks them there.
#include <cstddef>

#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cuda::layers {

namespace {

using namespace models::layout::token_embedding;

class TokenEmbedding final : public KindLayer {
 public:
  TokenEmbedding(const models::Model& model, const models::Layer& spec, Parameters parameters,
                 const LayerContext& context)
      : KindLayer(model, spec, std::move(parameters), context), h_(model.hidden), s_(model.seq) {}

  DeviceTensor forward(DeviceTensor input, const DeviceTensor* /*target*/, DeviceStash& stash,
                       MemoryAccount* account) override {
    const LayerContext& context = context_;
    const std::int64_t b = expect_tensor(spec_, "input", input, DeviceType::i32, {kAnyBatch, s_});
    input.charge_to(account);
    DeviceTensor out = scratch(context, {b, s_, h_});
    embedding_forward(b, s_, h_, input.i32(), value(kTok), nullptr, out.f32(), raw(context));
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    return out;
  }

  DeviceTensor backward(DeviceStash stash, const DeviceTensor& grad_output) override {
    const LayerContext& context = context_;
    expect_stash(spec_, stash, kKeptCount);
    const DeviceTensor& ids = stash.tensors[kIds];
    const std::int64_t b = ids.dim(0);
    expect_tensor(spec_, "grad_output", grad_output, DeviceType::f32, {b, s_, h_});
    embedding_backward(b, s_, h_, ids.i32(), grad_output.f32(), grad(kTok), nullptr, raw(context));
    return {};
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
};

}  // namespace

std::unique_ptr<DeviceLayer> make_token_embedding(const models::Model& model,
                                                  const models::Layer& spec, Parameters parameters,
                                                  const LayerContext& context) {
  return std::make_unique<TokenEmbedding>(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda::layers
