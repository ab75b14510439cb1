#include "exec/cuda/profiler/profile_inputs.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "schedules/error.hpp"

namespace gpipe::exec::cuda::profiler {
namespace {

std::vector<std::int64_t> float_shape(const models::Model& model, int b, std::int64_t elems) {
  // Every floating tensor of a sequence model is per token.
  if (model.seq > 0 && elems % model.seq == 0) return {b, model.seq, elems / model.seq};
  return {b, elems};
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

SizeInputs random_size_inputs(const models::Model& model, int b, std::mt19937_64& rng) {
  SizeInputs s;
  s.micro_batch_size = b;
  const models::Layer& first = model.layers.front();
  s.input = first.input_index_bytes > 0 ? random_tokens(b, first.input_index_bytes / 4, model.vocab, rng)
                                        : random_normal(float_shape(model, b, first.input_elems), 1.0F, rng);
  for (const models::Layer& layer : model.layers) {
    Tensor& target = s.targets.emplace_back();
    if (layer.target_index_bytes > 0) {
      target = random_tokens(b, layer.target_index_bytes / 4, model.vocab, rng);
    } else if (layer.target_elems > 0) {
      target = random_normal(float_shape(model, b, layer.target_elems), 1.0F, rng);
    }
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

}  // namespace gpipe::exec::cuda::profiler
