#include "exec/cpu/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpipe::exec::cpu {

OptimizerState::OptimizerState(const OptimizerConfig& config,
                               std::span<const Parameter> parameters)
    : config_(config) {
  const bool has_first = config.kind != models::Optimizer::sgd;
  const bool has_second = config.kind == models::Optimizer::adamw;
  for (const Parameter& p : parameters) {
    if (has_first) first_.emplace_back(p.value.shape());
    if (has_second) second_.emplace_back(p.value.shape());
  }
}

void OptimizerState::step(std::span<Parameter> parameters) {
  if (config_.kind != models::Optimizer::sgd && parameters.size() != first_.size()) {
    throw std::logic_error("optimizer step: not the parameters its state was made for");
  }
  ++steps_;
  const float lr = config_.learning_rate;
  // AdamW's bias corrections, as torch.optim.AdamW computes them.
  const double correction1 = 1.0 - std::pow(static_cast<double>(config_.beta1), steps_);
  const double correction2 = 1.0 - std::pow(static_cast<double>(config_.beta2), steps_);
  const float step_size = static_cast<float>(lr / correction1);
  const float sqrt_correction2 = static_cast<float>(std::sqrt(correction2));

  for (std::size_t i = 0; i < parameters.size(); ++i) {
    std::span<float> w = parameters[i].value.f32();
    std::span<float> g = parameters[i].grad.f32();
    switch (config_.kind) {
      case models::Optimizer::sgd:
        for (std::size_t j = 0; j < w.size(); ++j) w[j] -= lr * g[j];
        break;
      case models::Optimizer::momentum: {
        std::span<float> v = first_[i].f32();
        const float mu = config_.momentum;
        for (std::size_t j = 0; j < w.size(); ++j) {
          v[j] = mu * v[j] + g[j];  // v starts at 0, so the first step is v = g
          w[j] -= lr * v[j];
        }
        break;
      }
      case models::Optimizer::adamw: {
        std::span<float> m = first_[i].f32();
        std::span<float> v = second_[i].f32();
        const float b1 = config_.beta1;
        const float b2 = config_.beta2;
        const float decay = 1.0F - lr * config_.weight_decay;
        for (std::size_t j = 0; j < w.size(); ++j) {
          w[j] *= decay;
          m[j] = b1 * m[j] + (1.0F - b1) * g[j];
          v[j] = b2 * v[j] + (1.0F - b2) * g[j] * g[j];
          w[j] -= step_size * m[j] / (std::sqrt(v[j]) / sqrt_correction2 + config_.epsilon);
        }
        break;
      }
    }
    std::fill(g.begin(), g.end(), 0.0F);
  }
}

std::int64_t OptimizerState::bytes() const {
  std::int64_t total = 0;
  for (const Tensor& t : first_) total += t.bytes();
  for (const Tensor& t : second_) total += t.bytes();
  return total;
}

}  // namespace gpipe::exec::cpu
