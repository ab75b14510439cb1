// Shared by the CPU layer tests: one small case per layer kind (plus an
// mlp_block of another inner width), and random inputs and targets of the
// shapes exec/cpu/layers/layer.hpp documents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "exec/runtime/tensor.hpp"
#include "models/families.hpp"
#include "models/model.hpp"

namespace gpipe::exec::cpu::cases {

struct LayerCase {
  std::string label;
  models::Model model;
  int index = 0;
  [[nodiscard]] const models::Layer& spec() const {
    return model.layers[static_cast<std::size_t>(index)];
  }
  [[nodiscard]] const std::string& kind() const { return spec().kind; }
  [[nodiscard]] bool is_loss() const {
    return kind() == models::layer_kind::mse_loss || kind() == models::layer_kind::lm_head;
  }
  friend void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.label; }
};

// H=8, S=4, A=2, V=11; mlp F=32; the unbalanced model's second block F=64.
inline models::Model small_transformer() {
  return models::build_transformer({.layers = 1, .hidden = 8, .heads = 2, .seq = 4, .vocab = 11});
}

inline std::vector<LayerCase> layer_cases() {
  const models::Model mlp = models::build_mlp(1, 8);
  const models::Model gpt = small_transformer();
  return {{"mlp_block", mlp, 0}, {"mse_loss", mlp, 1},
          {"embedding", gpt, 0}, {"transformer_block", gpt, 1},
          {"lm_head", gpt, 2},   {"mlp_block_wide", models::build_unbalanced(2, 8), 1}};
}

inline std::vector<std::int64_t> input_shape(const LayerCase& c, std::int64_t b) {
  const std::int64_t h = c.model.hidden;
  const std::int64_t s = c.model.seq;
  if (c.kind() == models::layer_kind::mlp_block || c.kind() == models::layer_kind::mse_loss) {
    return {b, h};
  }
  if (c.kind() == models::layer_kind::embedding) return {b, s};
  return {b, s, h};
}

inline std::vector<std::int64_t> output_shape(const LayerCase& c, std::int64_t b) {
  if (c.is_loss()) return {b};
  if (c.kind() == models::layer_kind::embedding) return {b, c.model.seq, c.model.hidden};
  return input_shape(c, b);
}

inline Tensor random_ids(std::vector<std::int64_t> shape, int vocab, std::mt19937& rng) {
  Tensor t(std::move(shape), ElementType::i32);
  std::uniform_int_distribution<std::int32_t> id(0, vocab - 1);
  for (std::int32_t& v : t.i32()) v = id(rng);
  return t;
}

inline Tensor random_normal(std::vector<std::int64_t> shape, std::mt19937& rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (float& v : t.f32()) v = normal(rng);
  return t;
}

inline Tensor random_input(const LayerCase& c, std::int64_t b, std::mt19937& rng) {
  if (c.kind() == models::layer_kind::embedding)
    return random_ids(input_shape(c, b), c.model.vocab, rng);
  return random_normal(input_shape(c, b), rng);
}

// The target of a loss layer; an empty tensor for the others.
inline Tensor random_target(const LayerCase& c, std::int64_t b, std::mt19937& rng) {
  if (c.kind() == models::layer_kind::mse_loss) return random_normal({b, c.model.hidden}, rng);
  if (c.kind() == models::layer_kind::lm_head)
    return random_ids({b, c.model.seq}, c.model.vocab, rng);
  return {};
}

// The number of tensors each kind stashes, per models/model.hpp.
inline std::size_t stash_count(const LayerCase& c) {
  if (c.kind() == models::layer_kind::mlp_block) return 5;
  if (c.kind() == models::layer_kind::mse_loss) return 2;
  if (c.kind() == models::layer_kind::embedding) return 1;
  if (c.kind() == models::layer_kind::transformer_block) return 11;
  return 5;  // lm_head
}

// Same type, shape and values, bit for bit.
inline bool same_values(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type() || a.shape() != b.shape()) return false;
  if (a.type() == ElementType::f32) return std::ranges::equal(a.f32(), b.f32());
  return std::ranges::equal(a.i32(), b.i32());
}

}  // namespace gpipe::exec::cpu::cases
