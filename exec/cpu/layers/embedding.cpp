// The embedding layer: h[s] = tok[id[s]] + pos[s] (models/model.hpp). A
// gather forward and a scatter-add backward; the ids are its whole stash and
// it has no input gradient. Split, its I does the scatter-add and W nothing.
// With the model's dropout=p, h is dropped (exec/cpu/ops/dropout.hpp) and
// the mask kept after the ids.
#include <fmt/format.h>

#include <cstddef>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::embedding;

class Embedding final : public KindLayer {
 public:
  Embedding(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init), h_(model.hidden), s_(model.seq), v_(model.vocab) {}

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t b = expect_tensor(spec_, "input", input, ElementType::i32, {kAnyBatch, s_});
    const std::int32_t* ids = input.i32().data();
    expect_ids_below("token", ids, b * s_, v_);
    input.charge_to(account);
    Tensor out = Tensor::uninitialized({b, s_, h_});
    const float* tok = value(kTok);
    const float* pos = value(kPos);
    float* y = out.data();
    for (std::int64_t i = 0; i < b * s_; ++i) {
      const float* t = tok + static_cast<std::int64_t>(ids[i]) * h_;
      const float* p = pos + (i % s_) * h_;
      for (std::int64_t j = 0; j < h_; ++j) y[i * h_ + j] = t[j] + p[j];
    }
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    if (has_dropout()) {
      Tensor mask = kept(kMask, b, account);
      const DropoutDraw draw = dropout_draw();
      draw_mask(draw, DropoutSite::embedding, b, s_ * h_, 0, mask.u8().data());
      apply_mask(b * s_ * h_, mask.u8().data(), draw.scale(), y, y);
      stash.tensors.push_back(std::move(mask));
    }
    return out;
  }

  // I does the whole weight gradient (the scatter-add needs d(out), more
  // than the ids W could keep); W keeps nothing. No input gradient.
  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* /*weight_account*/) override {
    expect_stash(spec_, stash, layout_.kept.size());
    start_weight_stash(weight_stash);
    const Tensor& kept_ids = stash.tensors[kIds];
    const std::int64_t b = kept_ids.dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, s_, h_});
    const std::int32_t* ids = kept_ids.i32().data();
    Tensor masked;  // the gradient through the dropout
    if (has_dropout()) {
      masked = Tensor::uninitialized({b, s_, h_});
      apply_mask(b * s_ * h_, stash.tensors[kMask].u8().data(), dropout_draw().scale(), grad_output.data(),
                 masked.data());
    }
    const float* dy = has_dropout() ? masked.data() : grad_output.data();
    float* dtok = grad(kTok);
    float* dpos = grad(kPos);
    for (std::int64_t i = 0; i < b * s_; ++i) {
      float* t = dtok + static_cast<std::int64_t>(ids[i]) * h_;
      float* p = dpos + (i % s_) * h_;
      for (std::int64_t j = 0; j < h_; ++j) {
        t[j] += dy[i * h_ + j];
        p[j] += dy[i * h_ + j];
      }
    }
    return {};
  }

 private:
  std::int64_t h_;
  std::int64_t s_;
  std::int64_t v_;
};

}  // namespace

std::unique_ptr<Layer> make_embedding(const models::Model& model, const models::Layer& spec,
                                      NormalInit& init) {
  return std::make_unique<Embedding>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
