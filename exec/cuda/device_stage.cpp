#include "exec/cuda/device_stage.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace gpipe::exec::cuda {

DeviceStage::DeviceStage(const models::Model& model, int first_layer, int end_layer,
                         std::uint64_t seed, const OptimizerConfig& optimizer,
                         int num_microbatches, MemoryAccount* account, const LayerContext& context)
    : is_last_(end_layer == static_cast<int>(model.layers.size())),
      context_(context),
      stashes_(static_cast<std::size_t>(num_microbatches)),
      kept_(static_cast<std::size_t>(num_microbatches), Kept::nothing),
      account_(account) {
  for (int l = first_layer; l < end_layer; ++l) {
    layers_.push_back(make_device_layer(model, l, seed, context_));
    optimizers_.emplace_back(optimizer, layers_.back()->parameters(), *context_.allocator,
                             *context_.stream);
  }
}

std::vector<DeviceStash>& DeviceStage::stashes(int microbatch, Kept expected, const char* action) {
  const auto m = static_cast<std::size_t>(microbatch);
  if (m >= kept_.size())
    throw std::out_of_range(fmt::format("{}: no micro-batch {}", action, microbatch));
  if (kept_[m] != expected) {
    static constexpr const char* names[] = {"nothing", "the full stash", "the input only"};
    throw std::logic_error(fmt::format("{} of micro-batch {} found {} kept", action, microbatch,
                                       names[static_cast<int>(kept_[m])]));
  }
  return stashes_[m];
}

DeviceTensor DeviceStage::run_layers(int microbatch, DeviceTensor input, const DeviceTensor* target) {
  auto& stash = stashes_[static_cast<std::size_t>(microbatch)];
  stash.clear();
  stash.resize(layers_.size());
  DeviceTensor x = std::move(input);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const bool loss_layer = is_last_ && l + 1 == layers_.size();
    x = layers_[l]->forward(context_, std::move(x), loss_layer ? target : nullptr, stash[l],
                            account_);
  }
  kept_[static_cast<std::size_t>(microbatch)] = Kept::everything;
  return x;
}

DeviceTensor DeviceStage::forward(int microbatch, DeviceTensor input, const DeviceTensor* target) {
  (void)stashes(microbatch, Kept::nothing, "F");
  return run_layers(microbatch, std::move(input), target);
}

void DeviceStage::drop_to_boundary(int microbatch) {
  auto& stash = stashes(microbatch, Kept::everything, "dropping the stash");
  // Every kind stashes its input first: the stage's boundary input In_s.
  DeviceTensor input = std::move(stash.front().tensors.front());
  stash.clear();
  stash.resize(layers_.size());
  stash.front().tensors.push_back(std::move(input));
  kept_[static_cast<std::size_t>(microbatch)] = Kept::boundary;
}

void DeviceStage::recompute(int microbatch, const DeviceTensor* target) {
  auto& stash = stashes(microbatch, Kept::boundary, "R");
  DeviceTensor input = std::move(stash.front().tensors.front());
  // The output was handed on by F already; the recomputed one is dropped
  // here, on the stream, as any temporary.
  (void)run_layers(microbatch, std::move(input), target);
}

DeviceTensor DeviceStage::backward(int microbatch, const DeviceTensor& grad_output) {
  auto& stash = stashes(microbatch, Kept::everything, "B");
  DeviceTensor grad;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    grad = layers_[l]->backward(context_, std::move(stash[l]),
                                l + 1 == layers_.size() ? grad_output : grad);
  }
  stash.clear();
  kept_[static_cast<std::size_t>(microbatch)] = Kept::nothing;
  return grad;
}

void DeviceStage::step() {
  for (std::size_t l = 0; l < layers_.size(); ++l)
    optimizers_[l].step(layers_[l]->parameters(), *context_.stream);
}

std::int64_t DeviceStage::static_bytes() const {
  std::int64_t bytes = 0;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    for (const DeviceParameter& p : layers_[l]->parameters()) bytes += p.value.bytes() + p.grad.bytes();
    bytes += optimizers_[l].bytes();
  }
  return bytes;
}

std::vector<std::vector<std::vector<float>>> DeviceStage::download_weights() const {
  std::vector<std::vector<std::vector<float>>> weights;
  for (const auto& layer : layers_) {
    auto& values = weights.emplace_back();
    for (const DeviceParameter& p : layer->parameters()) {
      auto& v = values.emplace_back(static_cast<std::size_t>(p.value.numel()));
      p.value.download(v, *context_.stream);
    }
  }
  return weights;
}

std::string DeviceStage::non_finite_gradient() const {
  for (const auto& layer : layers_) {
    for (const DeviceParameter& p : layer->parameters()) {
      std::vector<float> g(static_cast<std::size_t>(p.grad.numel()));
      p.grad.download(g, *context_.stream);
      for (float v : g) {
        if (!std::isfinite(v)) return fmt::format("{}.{}", layer->spec().name, p.name);
      }
    }
  }
  return "";
}

}  // namespace gpipe::exec::cuda
