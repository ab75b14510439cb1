#include "exec/cpu/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "exec/cpu/compute_team.hpp"
#include "exec/cpu/ops/vector_math.hpp"

namespace gpipe::exec::cpu {

namespace {

// The update loops are SIMD loops (see ops/vector_math.hpp); std::sqrt
// vectorizes because gpipe_exec is built with -fno-math-errno.
GPIPE_VECTOR_CLONES void sgd_update(std::size_t count, float lr, const float* g, float* w) {
#pragma omp simd
  for (std::size_t j = 0; j < count; ++j) w[j] -= lr * g[j];
}

GPIPE_VECTOR_CLONES void momentum_update(std::size_t count, float lr, float mu, const float* g,
                                         float* v, float* w) {
#pragma omp simd
  for (std::size_t j = 0; j < count; ++j) {
    v[j] = mu * v[j] + g[j];  // v starts at 0, so the first step is v = g
    w[j] -= lr * v[j];
  }
}

struct AdamWCoefficients {
  float b1, b2, decay, step_size, sqrt_correction2, epsilon;
};

GPIPE_VECTOR_CLONES void adamw_update(std::size_t count, const AdamWCoefficients& c,
                                      const float* g, float* m, float* v, float* w) {
  const AdamWCoefficients k = c;  // by value in the loop: no aliasing doubts
#pragma omp simd
  for (std::size_t j = 0; j < count; ++j) {
    w[j] *= k.decay;
    m[j] = k.b1 * m[j] + (1.0F - k.b1) * g[j];
    v[j] = k.b2 * v[j] + (1.0F - k.b2) * g[j] * g[j];
    w[j] -= k.step_size * m[j] / (std::sqrt(v[j]) / k.sqrt_correction2 + k.epsilon);
  }
}

// Elements are independent: update(at, count) over ranges split over the rank's team.
template <class Update>
void in_ranges(std::size_t size, Update&& update) {
  for_element_ranges(static_cast<std::int64_t>(size), 1, [&](std::int64_t begin, std::int64_t end) {
    update(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
  });
}

std::vector<std::int64_t> sizes_of(std::span<const Parameter> parameters) {
  std::vector<std::int64_t> sizes;
  for (const Parameter& p : parameters) sizes.push_back(p.value.numel());
  return sizes;
}

std::int64_t owned_count(const std::vector<ValueRange>& runs) {
  std::int64_t count = 0;
  for (const ValueRange& r : runs) count += r.count;
  return count;
}

}  // namespace

OptimizerState::OptimizerState(const OptimizerConfig& config, std::span<const Parameter> parameters)
    : OptimizerState(config, parameters, whole_ranges(sizes_of(parameters))) {}

OptimizerState::OptimizerState(const OptimizerConfig& config, std::span<const Parameter> parameters,
                               std::vector<std::vector<ValueRange>> owned)
    : config_(config), owned_(std::move(owned)) {
  if (owned_.size() != parameters.size()) throw std::logic_error("optimizer: one list of runs per parameter");
  const bool has_first = config.kind != models::Optimizer::sgd;
  const bool has_second = config.kind == models::Optimizer::adamw;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    for (const ValueRange& r : owned_[i]) {
      if (r.first < 0 || r.count < 0 || r.first + r.count > parameters[i].value.numel()) {
        throw std::logic_error("optimizer: a run outside its parameter");
      }
    }
    const std::int64_t count = owned_count(owned_[i]);
    if (has_first) first_.emplace_back(std::vector<std::int64_t>{count});
    if (has_second) second_.emplace_back(std::vector<std::int64_t>{count});
  }
}

void OptimizerState::step(std::span<Parameter> parameters) {
  if (parameters.size() != owned_.size()) {
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
    std::span<float> g = parameters[i].grad.f32();
    std::int64_t state_at = 0;  // where this run's state starts among the owned values
    for (const ValueRange& run : owned_[i]) {
      float* w = parameters[i].value.f32().data() + run.first;
      const float* gr = g.data() + run.first;
      const auto size = static_cast<std::size_t>(run.count);
      switch (config_.kind) {
        case models::Optimizer::sgd:
          in_ranges(size, [&](std::size_t at, std::size_t count) { sgd_update(count, lr, gr + at, w + at); });
          break;
        case models::Optimizer::momentum: {
          float* v = first_[i].data() + state_at;
          in_ranges(size, [&](std::size_t at, std::size_t count) {
            momentum_update(count, lr, config_.momentum, gr + at, v + at, w + at);
          });
          break;
        }
        case models::Optimizer::adamw: {
          const AdamWCoefficients c{config_.beta1,  config_.beta2,     1.0F - lr * config_.weight_decay,
                                    step_size,      sqrt_correction2, config_.epsilon};
          float* m = first_[i].data() + state_at;
          float* v = second_[i].data() + state_at;
          in_ranges(size, [&](std::size_t at, std::size_t count) {
            adamw_update(count, c, gr + at, m + at, v + at, w + at);
          });
          break;
        }
      }
      state_at += run.count;
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
