#include "exec/runtime/stage_state.hpp"

#include <cmath>

#include <fmt/format.h>

namespace gpipe::exec {

bool all_finite(const Tensor& tensor) {
  for (float v : tensor.f32()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

StageState::StageState(const models::Model& model, int first_layer, int end_layer,
                       std::uint64_t seed, const OptimizerConfig& optimizer, int num_microbatches,
                       MemoryAccount* account)
    : is_last_(end_layer == static_cast<int>(model.layers.size())),
      book_(num_microbatches, static_cast<std::size_t>(end_layer - first_layer)),
      account_(account) {
  for (int l = first_layer; l < end_layer; ++l) {
    layers_.push_back(cpu::make_layer(model, l, seed));
    optimizers_.emplace_back(optimizer, layers_.back()->parameters());
  }
}

Tensor StageState::run_layers(int microbatch, Tensor input, const Tensor* target) {
  auto& stash = book_.fill(microbatch);
  Tensor x = std::move(input);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const bool loss_layer = is_last_ && l + 1 == layers_.size();
    x = layers_[l]->forward(std::move(x), loss_layer ? target : nullptr, stash[l], account_);
  }
  return x;
}

Tensor StageState::forward(int microbatch, Tensor input, const Tensor* target) {
  (void)book_.expect(microbatch, Book::Kept::nothing, "F");
  return run_layers(microbatch, std::move(input), target);
}

void StageState::drop_to_boundary(int microbatch) { book_.keep_boundary(microbatch); }

void StageState::recompute(int microbatch, const Tensor* target) {
  // The output (the next stage's input, or the loss) was handed on by F already.
  (void)run_layers(microbatch, book_.take_boundary(microbatch), target);
}

Tensor StageState::backward(int microbatch, const Tensor& grad_output) {
  auto& stash = book_.expect(microbatch, Book::Kept::everything, "B");
  Tensor grad;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    grad = layers_[l]->backward(std::move(stash[l]), l + 1 == layers_.size() ? grad_output : grad);
  }
  book_.consumed(microbatch);
  return grad;
}

void StageState::step() {
  for (std::size_t l = 0; l < layers_.size(); ++l) optimizers_[l].step(layers_[l]->parameters());
}

std::optional<std::string> StageState::non_finite_gradient() const {
  for (const auto& layer : layers_) {
    for (const cpu::Parameter& p : layer->parameters()) {
      if (!all_finite(p.grad)) return fmt::format("{}.{}", layer->spec().name, p.name);
    }
  }
  return std::nullopt;
}

std::int64_t StageState::static_bytes() const {
  std::int64_t bytes = 0;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    for (const cpu::Parameter& p : layers_[l]->parameters())
      bytes += p.value.bytes() + p.grad.bytes();
    bytes += optimizers_[l].bytes();
  }
  return bytes;
}

}  // namespace gpipe::exec
