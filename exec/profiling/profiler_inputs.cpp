#include "exec/profiling/profiler_inputs.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/runtime/synthetic_data.hpp"
#include "models/context_parallel.hpp"

namespace gpipe::exec {
namespace {

Tensor random_normal(std::vector<std::int64_t> shape, float scale, std::mt19937_64& rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> normal(0.0F, scale);
  for (auto& v : t.f32()) v = normal(rng);
  return t;
}

}  // namespace

std::vector<int> checked_micro_batch_sizes(std::span<const int> sizes) {
  if (sizes.empty()) throw InputError("--micro-batch-sizes: no size given");
  std::vector<int> sorted(sizes.begin(), sizes.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 1) {
    throw InputError(fmt::format("--micro-batch-sizes: sizes must be at least 1, got {}", sorted.front()));
  }
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    throw InputError(fmt::format("--micro-batch-sizes: {} is given more than once", *dup));
  }
  return sorted;
}

void check_pass_counts(int warmup, int repeats) {
  if (warmup < 0) throw InputError(fmt::format("--warmup must be 0 or more, got {}", warmup));
  if (repeats < 1) throw InputError(fmt::format("--repeats must be at least 1, got {}", repeats));
}

SizeInputs training_size_inputs(const models::Model& model, int b, std::uint64_t seed, int context_member) {
  Batch batch = SyntheticTask(model, seed).batch(0, b);
  if (model.context_parallel > 1) {
    const std::vector<std::int64_t> mine = models::context_positions(model.seq, model.context_parallel, context_member);
    batch.inputs = tokens_at(batch.inputs, mine);
    batch.targets = tokens_at(batch.targets, mine);
  }
  SizeInputs s;
  s.micro_batch_size = b;
  s.input = batch.inputs.clone();
  for (const models::Layer& layer : model.layers) {
    const bool loss = layer.target_elems > 0 || layer.target_index_bytes > 0;
    s.targets.push_back(loss ? batch.targets.clone() : Tensor());
  }
  return s;
}

Tensor output_gradient(const std::vector<std::int64_t>& output_shape, const models::Layer& last, int b,
                       std::mt19937_64& rng) {
  if (last.output_elems == 1 && output_shape.size() == 1) {
    Tensor g(output_shape);
    std::fill(g.f32().begin(), g.f32().end(), 1.0F / static_cast<float>(b));
    return g;
  }
  return random_normal(output_shape, 0.01F, rng);
}

std::mt19937_64 output_gradient_generator(std::uint64_t seed) { return std::mt19937_64(seed ^ 0x9e3779b97f4a7c15ULL); }

void record_sample_bytes(profiles::ProfileSample& sample, bool first_pass, const models::Layer& layer, int b,
                         std::int64_t input_bytes, std::int64_t output_bytes, std::int64_t activation_bytes) {
  if (first_pass) {
    sample.micro_batch_size = b;
    sample.input_bytes = input_bytes;
    sample.output_bytes = output_bytes;
    sample.activation_bytes = activation_bytes;
  } else if (activation_bytes != sample.activation_bytes) {
    throw RunError(fmt::format("layer {}: the stash held {} bytes, then {} bytes at b={}", layer.name,
                               sample.activation_bytes, activation_bytes, b));
  }
}

void record_weight_stash_bytes(profiles::ProfileSample& sample, bool first_pass, const models::Layer& layer,
                               int b, std::int64_t weight_grad_stash_bytes) {
  if (first_pass) {
    sample.weight_grad_stash_bytes = weight_grad_stash_bytes;
  } else if (weight_grad_stash_bytes != sample.weight_grad_stash_bytes) {
    throw RunError(fmt::format("layer {}: I left {} bytes for W, then {} bytes at b={}", layer.name,
                               sample.weight_grad_stash_bytes.value_or(-1), weight_grad_stash_bytes, b));
  }
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace gpipe::exec
