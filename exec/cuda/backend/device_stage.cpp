#include "exec/cuda/backend/device_stage.hpp"

#include <cmath>

#include <fmt/format.h>

namespace gpipe::exec::cuda {

DeviceStage::DeviceStage(const models::Model& model, int first_layer, int end_layer,
                         std::uint64_t seed, const OptimizerConfig& optimizer,
                         int num_microbatches, MemoryAccount* account, const LayerContext& context)
    : is_last_(end_layer == static_cast<int>(model.layers.size())),
      context_(context),
      book_(num_microbatches, static_cast<std::size_t>(end_layer - first_layer)),
      account_(account) {
  for (int l = first_layer; l < end_layer; ++l) {
    layers_.push_back(make_device_layer(model, l, seed, context_));
    optimizers_.emplace_back(optimizer, layers_.back()->parameters(), *context_.allocator,
                             *context_.stream);
  }
}

DeviceTensor DeviceStage::run_layers(int microbatch, DeviceTensor input, const DeviceTensor* target) {
  auto& stash = book_.fill(microbatch);
  DeviceTensor x = std::move(input);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const bool loss_layer = is_last_ && l + 1 == layers_.size();
    x = layers_[l]->forward(context_, std::move(x), loss_layer ? target : nullptr, stash[l],
                            account_);
  }
  return x;
}

DeviceTensor DeviceStage::forward(int microbatch, DeviceTensor input, const DeviceTensor* target) {
  (void)book_.expect(microbatch, Book::Kept::nothing, "F");
  return run_layers(microbatch, std::move(input), target);
}

void DeviceStage::drop_to_boundary(int microbatch) { book_.keep_boundary(microbatch); }

void DeviceStage::recompute(int microbatch, const DeviceTensor* target) {
  // The output was handed on by F already; the recomputed one is dropped
  // here, on the stream, as any temporary.
  (void)run_layers(microbatch, book_.take_boundary(microbatch), target);
}

DeviceTensor DeviceStage::backward(int microbatch, const DeviceTensor& grad_output) {
  auto& stash = book_.expect(microbatch, Book::Kept::everything, "B");
  DeviceTensor grad;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    grad = layers_[l]->backward(context_, std::move(stash[l]),
                                l + 1 == layers_.size() ? grad_output : grad);
  }
  book_.consumed(microbatch);
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
