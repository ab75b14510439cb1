#include "exec/stage_state.hpp"

#include <cmath>
#include <stdexcept>

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
      stashes_(static_cast<std::size_t>(num_microbatches)),
      kept_(static_cast<std::size_t>(num_microbatches), Kept::nothing),
      account_(account) {
  for (int l = first_layer; l < end_layer; ++l) {
    layers_.push_back(cpu::make_layer(model, l, seed));
    optimizers_.emplace_back(optimizer, layers_.back()->parameters());
  }
}

std::vector<cpu::Stash>& StageState::stashes(int microbatch, Kept expected, const char* action) {
  const auto m = static_cast<std::size_t>(microbatch);
  if (m >= kept_.size())
    throw std::out_of_range(fmt::format("{}: no micro-batch {}", action, microbatch));
  if (kept_[m] != expected) {
    // A valid schedule never gets here; the message says which order broke.
    static constexpr const char* names[] = {"nothing", "the full stash", "the input only"};
    throw std::logic_error(fmt::format("{} of micro-batch {} found {} kept", action, microbatch,
                                       names[static_cast<int>(kept_[m])]));
  }
  return stashes_[m];
}

Tensor StageState::run_layers(int microbatch, Tensor input, const Tensor* target) {
  auto& stash = stashes_[static_cast<std::size_t>(microbatch)];
  stash.clear();
  stash.resize(layers_.size());
  Tensor x = std::move(input);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const bool loss_layer = is_last_ && l + 1 == layers_.size();
    x = layers_[l]->forward(std::move(x), loss_layer ? target : nullptr, stash[l], account_);
  }
  kept_[static_cast<std::size_t>(microbatch)] = Kept::everything;
  return x;
}

Tensor StageState::forward(int microbatch, Tensor input, const Tensor* target) {
  (void)stashes(microbatch, Kept::nothing, "F");
  return run_layers(microbatch, std::move(input), target);
}

void StageState::drop_to_boundary(int microbatch) {
  auto& stash = stashes(microbatch, Kept::everything, "dropping the stash");
  // Every kind stashes its input first (exec/cpu/layer.hpp): that is the
  // stage's boundary input, In_s, which R starts from.
  Tensor input = std::move(stash.front().tensors.front());
  stash.clear();
  stash.resize(layers_.size());
  stash.front().tensors.push_back(std::move(input));
  kept_[static_cast<std::size_t>(microbatch)] = Kept::boundary;
}

void StageState::recompute(int microbatch, const Tensor* target) {
  auto& stash = stashes(microbatch, Kept::boundary, "R");
  Tensor input = std::move(stash.front().tensors.front());
  // The output (the next stage's input, or the loss) was handed on by F already.
  (void)run_layers(microbatch, std::move(input), target);
}

Tensor StageState::backward(int microbatch, const Tensor& grad_output) {
  auto& stash = stashes(microbatch, Kept::everything, "B");
  Tensor grad;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    grad = layers_[l]->backward(std::move(stash[l]), l + 1 == layers_.size() ? grad_output : grad);
  }
  stash.clear();
  kept_[static_cast<std::size_t>(microbatch)] = Kept::nothing;
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
