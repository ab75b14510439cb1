// The dit_embed layer (models/model.hpp), DiT's input side: the patches'
// embedding (a P x P convolution of stride P is one Linear per patch) plus a
// position table, and the conditioning c = MLP(timestep features) + label
// embedding, handed on as one more row: out [b, T+1, H], rows 0..T-1 the
// tokens, row T the conditioning. Its input is data (no input gradient); I
// does every weight gradient, W keeps nothing.
#include <fmt/format.h>

#include <cmath>

#include "base/error.hpp"
#include "exec/cpu/layers/kind_base.hpp"
#include "exec/cpu/layers/layer_kinds.hpp"
#include "exec/cpu/ops/linear.hpp"
#include "exec/cpu/ops/modulation.hpp"
#include "exec/cpu/ops/swiglu.hpp"
#include "exec/layers/layer_checks.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::exec::cpu {

namespace {

using namespace models::layout::dit_embed;

// DiT's TimestepEmbedder: max_period 10000.
constexpr double kMaxPeriod = 10000.0;

class DitEmbed final : public KindLayer {
 public:
  DitEmbed(const models::Layer& spec, const models::Model& model, NormalInit& init)
      : KindLayer(model, spec, init),
        h_(model.hidden),
        t_(model.seq),
        p_(static_cast<std::int64_t>(model.patch) * model.patch * model.channels),
        classes_(model.classes) {}

  Tensor forward(Tensor input, const Tensor* /*target*/, Stash& stash,
                 MemoryAccount* account) override {
    const std::int64_t width = t_ * p_ + 2;
    const std::int64_t b = expect_tensor(spec_, "input", input, ElementType::f32, {kAnyBatch, width});
    Tensor steps = Tensor::uninitialized({b});
    std::vector<std::int64_t> labels(static_cast<std::size_t>(b));
    for (std::int64_t n = 0; n < b; ++n) {
      const float* sample = input.data() + n * width;
      steps.data()[n] = sample[t_ * p_];
      labels[static_cast<std::size_t>(n)] = label_of(sample[t_ * p_ + 1], n);
    }
    input.charge_to(account);
    stash.tensors.clear();
    stash.tensors.push_back(std::move(input));
    for (std::size_t k = kFreq; k < kKeptCount; ++k) stash.tensors.push_back(kept(k, b, account));
    auto at = [&](Kept k) { return stash.tensors[k].data(); };

    Tensor out = Tensor::uninitialized({b, t_ + 1, h_});
    for (std::int64_t n = 0; n < b; ++n) {
      linear_forward({t_, p_, h_}, at(kInput) + n * width, value(kPatchW), value(kPatchB),
                     out.data() + n * (t_ + 1) * h_, value(kPos));
    }
    timestep_embedding(b, steps.data(), models::kTimestepFeatures, kMaxPeriod, at(kFreq));
    linear_forward({b, models::kTimestepFeatures, h_}, at(kFreq), value(kT1), value(kT1b), at(kTPre));
    silu_forward(b * h_, at(kTPre), at(kTAct));
    Tensor c = Tensor::uninitialized({b, h_});
    linear_forward({b, h_, h_}, at(kTAct), value(kT2), value(kT2b), c.data());
    for (std::int64_t n = 0; n < b; ++n) {
      const float* label = value(kLabels) + labels[static_cast<std::size_t>(n)] * h_;
      float* row = out.data() + (n * (t_ + 1) + t_) * h_;
      for (std::int64_t j = 0; j < h_; ++j) row[j] = c.data()[n * h_ + j] + label[j];
    }
    return out;
  }

  Tensor backward_input(Stash stash, const Tensor& grad_output, Stash& weight_stash,
                        MemoryAccount* /*weight_account*/) override {
    expect_stash(spec_, stash, kKeptCount);
    start_weight_stash(weight_stash);
    const std::int64_t width = t_ * p_ + 2;
    const std::int64_t b = stash.tensors[kInput].dim(0);
    expect_tensor(spec_, "grad_output", grad_output, ElementType::f32, {b, t_ + 1, h_});
    auto at = [&](Kept k) { return stash.tensors[k].data(); };
    const float* dy = grad_output.data();
    Tensor dc = Tensor::uninitialized({b, h_});
    for (std::int64_t n = 0; n < b; ++n) {
      const float* dtokens = dy + n * (t_ + 1) * h_;
      linear_backward_weight({t_, p_, h_}, at(kInput) + n * width, dtokens, grad(kPatchW),
                             grad(kPatchB));
      float* dpos = grad(kPos);
      for (std::int64_t i = 0; i < t_ * h_; ++i) dpos[i] += dtokens[i];
      const float* drow = dtokens + t_ * h_;
      float* dlabel = grad(kLabels) + label_of(at(kInput)[n * width + t_ * p_ + 1], n) * h_;
      for (std::int64_t j = 0; j < h_; ++j) {
        dlabel[j] += drow[j];
        dc.data()[n * h_ + j] = drow[j];
      }
    }
    linear_backward_weight({b, h_, h_}, at(kTAct), dc.data(), grad(kT2), grad(kT2b));
    Tensor dact = Tensor::uninitialized({b, h_});
    linear_backward_input({b, h_, h_}, value(kT2), dc.data(), dact.data());
    silu_backward(b * h_, at(kTPre), dact.data(), dact.data());
    linear_backward_weight({b, models::kTimestepFeatures, h_}, at(kFreq), dact.data(), grad(kT1),
                           grad(kT1b));
    return {};
  }

 private:
  // A label is an integer in [0, N]: N is DiT's unconditional label.
  [[nodiscard]] std::int64_t label_of(float value, std::int64_t sample) const {
    if (!(value >= 0.0F && value <= static_cast<float>(classes_)) || std::floor(value) != value) {
      throw InputError(fmt::format("layer {} ({}): sample {}'s class label {} is not an integer in [0, {}]",
                                   spec_.name, spec_.kind, sample, value, classes_));
    }
    return static_cast<std::int64_t>(value);
  }

  std::int64_t h_;
  std::int64_t t_;
  std::int64_t p_;
  std::int64_t classes_;
};

}  // namespace

std::unique_ptr<Layer> make_dit_embed(const models::Model& model, const models::Layer& spec,
                                      NormalInit& init) {
  return std::make_unique<DitEmbed>(spec, model, init);
}

}  // namespace gpipe::exec::cpu
