// The token_embedding layer (llama): h[s] = tok[id[s]] (models/model.hpp). As
// the embedding without a position table, since the rotary embedding inside
// each block places the tokens. I does the scatter-add, W nothing.
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "models/context_parallel.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::token_embedding;

class TokenEmbedding final : public KindLayer {
 public:
  TokenEmbedding(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init), h_(model.hidden), s_(models::tokens_per_gpu(model)), v_(model.vocab) {}

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b = expect_tensor(spec_, "input", input, ElementType::i32, {kAnyBatch, s_});
    const std::int32_t* ids = input.i32().data();
    expect_ids_below("token", ids, b * s_, v_);
    input.charge_to(account);
    Tensor out = Tensor::uninitialized({b, s_, h_});
    const float* tok = value(kTok);
    float* y = out.data();
    for (std::int64_t i = 0; i < b * s_; ++i) {
      const float* t = tok + static_cast<std::int64_t>(ids[i]) * h_;
      for (std::int64_t j = 0; j < h_; ++j) y[i * h_ + j] = t[j];
    }
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    return out;
  }

  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* /*weight_account*/) override {
    expect_stash(spec_, stash, kKeptCount);
    start_weight_stash(weight_stash);
    const Tensor& kept_ids = stash.tensors[kIds];
    const std::int64_t b = kept_ids.dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, s_, h_});
    const std::int32_t* ids = kept_ids.i32().data();
    const float* dy = grad_output.data();
    float* dtok = grad(kTok);
    for (std::int64_t i = 0; i < b * s_; ++i) {
      float* t = dtok + static_cast<std::int64_t>(ids[i]) * h_;
      for (std::int64_t j = 0; j < h_; ++j) t[j] += dy[i * h_ + j];
    }
    return {};
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
  std::int64_t v_;
};

}  // namespace

std::unique_ptr<Layer> make_token_embedding(const models::Model& model, const models::Layer& spec,
                                            NormalInit& init) {
  return std::make_unique<TokenEmbedding>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
