#include "exec/cuda/layers/device_optimizer.hpp"

#include <stdexcept>

#include "exec/cuda/kernels/optimizer.hpp"

namespace gpipe::exec::cuda {

DeviceOptimizerState::DeviceOptimizerState(const OptimizerConfig& config,
                                           std::span<const DeviceParameter> parameters,
                                           CachingAllocator& allocator, const Stream& stream)
    : config_(config), stream_(&stream) {
  const bool has_first = config.kind != models::Optimizer::sgd;
  const bool has_second = config.kind == models::Optimizer::adamw;
  for (const DeviceParameter& p : parameters) {
    if (has_first) first_.emplace_back(allocator, p.value.shape(), DeviceType::f32).zero(stream);
    if (has_second) second_.emplace_back(allocator, p.value.shape(), DeviceType::f32).zero(stream);
  }
}

void DeviceOptimizerState::step(std::span<DeviceParameter> parameters) {
  const Stream& stream = *stream_;
  if (config_.kind != models::Optimizer::sgd && parameters.size() != first_.size()) {
    throw std::logic_error("device optimizer step: not the parameters its state was made for");
  }
  ++steps_;
  const kernels::AdamwHyper hyper{config_.learning_rate, config_.beta1, config_.beta2,
                                  config_.epsilon, config_.weight_decay};
  const kernels::AdamwScalars scalars = kernels::adamw_scalars(hyper, steps_);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    DeviceParameter& p = parameters[i];
    const std::int64_t count = p.value.numel();
    switch (config_.kind) {
      case models::Optimizer::sgd:
        kernels::sgd_step(count, config_.learning_rate, p.value.f32(), p.grad.f32(), stream.get());
        break;
      case models::Optimizer::momentum:
        kernels::momentum_step(count, config_.learning_rate, config_.momentum, p.value.f32(),
                               p.grad.f32(), first_[i].f32(), stream.get());
        break;
      case models::Optimizer::adamw:
        kernels::adamw_step(count, scalars, p.value.f32(), p.grad.f32(), first_[i].f32(),
                            second_[i].f32(), stream.get());
        break;
    }
  }
}

std::int64_t DeviceOptimizerState::bytes() const {
  std::int64_t total = 0;
  for (const DeviceTensor& t : first_) total += t.bytes();
  for (const DeviceTensor& t : second_) total += t.bytes();
  return total;
}

}  // namespace gpipe::exec::cuda
