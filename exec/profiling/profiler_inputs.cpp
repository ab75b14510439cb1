#include "exec/profiling/profiler_inputs.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "models/layer_layout.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec {
namespace {

// The executor's shape of a layer's floating input (the first tensor it
// keeps) or target (the one named "target"), from the kind's layout.
std::vector<std::int64_t> input_shape(const models::LayerLayout& layout, int b) {
  return layout.kept_shape(0, b);
}

std::vector<std::int64_t> target_shape(const models::LayerLayout& layout, int b) {
  for (std::size_t i = 0; i < layout.kept.size(); ++i) {
    if (layout.kept[i].name == "target") return layout.kept_shape(i, b);
  }
  throw std::logic_error("a layer with a floating target keeps no tensor named target");
}

Tensor random_tokens(std::int64_t b, std::int64_t per_sample, int vocab, std::mt19937_64& rng) {
  Tensor t({b, per_sample}, ElementType::i32);
  std::uniform_int_distribution<std::int32_t> token(0, std::max(vocab, 1) - 1);
  for (auto& v : t.i32()) v = token(rng);
  return t;
}

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

LayerInputs random_layer_inputs(const models::Model& model, const models::Layer& layer, int b,
                                std::mt19937_64& rng) {
  LayerInputs in;
  const models::LayerLayout layout = models::layer_layout(model, layer);
  if (layer.input_index_bytes > 0) {
    in.input = random_tokens(b, layer.input_index_bytes / 4, model.vocab, rng);
  } else {
    in.input = random_normal(input_shape(layout, b), 1.0F, rng);
  }
  if (layer.kind == models::layer_kind::dit_embed) {
    // Each sample ends with its timestep and class label: integers, not noise.
    const std::int64_t width = layer.input_elems;
    std::uniform_int_distribution<int> step(0, 999);
    std::uniform_int_distribution<int> label(0, std::max(model.classes, 1) - 1);
    for (std::int64_t n = 0; n < b; ++n) {
      in.input.f32()[static_cast<std::size_t>(n * width + width - 2)] = static_cast<float>(step(rng));
      in.input.f32()[static_cast<std::size_t>(n * width + width - 1)] = static_cast<float>(label(rng));
    }
  }
  if (layer.target_index_bytes > 0) {
    in.target = random_tokens(b, layer.target_index_bytes / 4, model.vocab, rng);
  } else if (layer.target_elems > 0) {
    in.target = random_normal(target_shape(layout, b), 1.0F, rng);
  }
  return in;
}

SizeInputs random_size_inputs(const models::Model& model, int b, std::mt19937_64& rng) {
  SizeInputs s;
  s.micro_batch_size = b;
  s.input = random_layer_inputs(model, model.layers.front(), b, rng).input;
  for (const models::Layer& layer : model.layers) s.targets.push_back(random_layer_inputs(model, layer, b, rng).target);
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
