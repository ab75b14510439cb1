// Shared by the CPU layer tests: one small case per layer kind (plus an
// mlp_block of another inner width), and random inputs and targets of the
// shapes exec/cpu/layers/layer.hpp documents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "exec/cpu/layers/layer.hpp"
#include "exec/runtime/tensor.hpp"
#include "models/families.hpp"
#include "models/layer_layout.hpp"
#include "models/model.hpp"
#include "models/model_spec.hpp"

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
    return kind() == models::layer_kind::mse_loss || kind() == models::layer_kind::lm_head ||
           kind() == models::layer_kind::rms_head || kind() == models::layer_kind::dit_head;
  }
  // The first layers read data: token ids, or DiT's latent with its timestep
  // and label; they return no input gradient.
  [[nodiscard]] bool reads_data() const {
    return kind() == models::layer_kind::embedding || kind() == models::layer_kind::token_embedding ||
           kind() == models::layer_kind::dit_embed;
  }
  [[nodiscard]] bool reads_tokens() const {
    return kind() == models::layer_kind::embedding || kind() == models::layer_kind::token_embedding;
  }
  friend void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.label; }
};

// H=8, S=4, A=2, V=11; mlp F=32; the unbalanced model's second block F=64.
inline models::Model small_transformer() {
  return models::build_transformer({.layers = 1, .hidden = 8, .heads = 2, .seq = 4, .vocab = 11});
}

// H=8, A=4 (d=2), G=2, F=12, S=5, V=11.
inline models::Model small_llama(std::string_view attention = "flash") {
  return models::parse_model(
      "llama:layers=1,hidden=8,heads=4,kv_heads=2,ffn=12,seq=5,vocab=11,attn=" + std::string(attention));
}

// H=8, A=2, T=5, P=1, C=2 (2 values a patch in, 4 out), N=3.
inline models::Model small_dit(std::string_view attention = "flash") {
  return models::parse_model("dit:layers=1,hidden=8,heads=2,tokens=5,patch=1,channels=2,classes=3,attn=" +
                             std::string(attention));
}

inline std::vector<LayerCase> layer_cases() {
  const models::Model mlp = models::build_mlp(1, 8);
  const models::Model gpt = small_transformer();
  const models::Model llama = small_llama();
  const models::Model dit = small_dit();
  return {{"mlp_block", mlp, 0},
          {"mse_loss", mlp, 1},
          {"embedding", gpt, 0},
          {"transformer_block", gpt, 1},
          {"lm_head", gpt, 2},
          {"mlp_block_wide", models::build_unbalanced(2, 8), 1},
          {"transformer_block_flash",
           models::parse_model("transformer:layers=1,hidden=8,heads=2,seq=4,vocab=11,attn=flash"), 1},
          {"token_embedding", llama, 0},
          {"llama_block", llama, 1},
          {"llama_block_naive", small_llama("naive"), 1},
          {"rms_head", llama, 2},
          {"dit_embed", dit, 0},
          {"dit_block", dit, 1},
          {"dit_block_naive", small_dit("naive"), 1},
          {"dit_head", dit, 2}};
}

// The CPU's own cases besides (the CUDA layers have no dropout yet): the
// embedding and the blocks with dropout=0.25, naive and flash. Their layers
// drop only while training (training_layer()).
inline std::vector<LayerCase> dropout_layer_cases() {
  const std::string gpt = "transformer:layers=1,hidden=8,heads=2,seq=4,vocab=11,dropout=0.25";
  return {{"embedding_dropout", models::parse_model(gpt), 0},
          {"transformer_block_dropout", models::parse_model(gpt), 1},
          {"transformer_block_flash_dropout", models::parse_model(gpt + ",attn=flash"), 1}};
}

inline std::vector<LayerCase> cpu_layer_cases() {
  std::vector<LayerCase> all = layer_cases();
  for (LayerCase& c : dropout_layer_cases()) all.push_back(std::move(c));
  return all;
}

// The case's layer from `seed`, its forwards those of a training step (step
// 1, the micro-batch from row 2), so that dropout draws its masks.
inline std::unique_ptr<Layer> training_layer(const LayerCase& c, std::uint64_t seed) {
  std::unique_ptr<Layer> layer = make_layer(c.model, c.index, seed);
  layer->set_samples({.step = 1, .first = 2, .training = true});
  return layer;
}

// The shapes of layer.hpp: a kind's input is the first tensor its layout keeps.
inline std::vector<std::int64_t> input_shape(const LayerCase& c, std::int64_t b) {
  return models::layer_layout(c.model, c.spec()).kept_shape(0, b);
}

inline std::vector<std::int64_t> output_shape(const LayerCase& c, std::int64_t b) {
  if (c.is_loss()) return {b};
  const std::int64_t rows = c.spec().output_elems / c.model.hidden;
  if (c.model.seq > 0) return {b, rows, c.model.hidden};
  return {b, c.model.hidden};
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
  if (c.reads_tokens()) return random_ids(input_shape(c, b), c.model.vocab, rng);
  Tensor x = random_normal(input_shape(c, b), rng);
  if (c.kind() == models::layer_kind::dit_embed) {
    // Each sample ends with its timestep and class label, integers.
    std::uniform_int_distribution<int> step(0, 999);
    std::uniform_int_distribution<int> label(0, c.model.classes);
    const std::int64_t width = x.numel() / b;
    for (std::int64_t n = 0; n < b; ++n) {
      x.f32()[static_cast<std::size_t>((n + 1) * width - 2)] = static_cast<float>(step(rng));
      x.f32()[static_cast<std::size_t>((n + 1) * width - 1)] = static_cast<float>(label(rng));
    }
  }
  return x;
}

// The target of a loss layer; an empty tensor for the others.
inline Tensor random_target(const LayerCase& c, std::int64_t b, std::mt19937& rng) {
  if (c.kind() == models::layer_kind::mse_loss) return random_normal({b, c.model.hidden}, rng);
  if (c.kind() == models::layer_kind::lm_head || c.kind() == models::layer_kind::rms_head)
    return random_ids({b, c.model.seq}, c.model.vocab, rng);
  if (c.kind() == models::layer_kind::dit_head) {
    const models::LayerLayout layout = models::layer_layout(c.model, c.spec());
    return random_normal(layout.kept_shape(models::layout::dit_head::kTarget, b), rng);
  }
  return {};
}

// The number of tensors each kind stashes, per models/model.hpp.
inline std::size_t stash_count(const LayerCase& c) {
  if (c.kind() == models::layer_kind::mlp_block) return 5;
  if (c.kind() == models::layer_kind::mse_loss) return 2;
  // With dropout: the embedding's mask; the blocks' two hidden masks, and
  // naive attention's mask and dropped probabilities.
  const bool dropout = c.model.dropout > 0;
  if (c.kind() == models::layer_kind::embedding) return dropout ? 2 : 1;
  if (c.kind() == models::layer_kind::transformer_block) {
    if (!dropout) return 11;
    return c.model.attention == models::Attention::naive ? 15 : 13;
  }
  if (c.kind() == models::layer_kind::token_embedding) return 1;
  if (c.kind() == models::layer_kind::llama_block) return 12;
  if (c.kind() == models::layer_kind::dit_embed) return 4;
  if (c.kind() == models::layer_kind::dit_block) return 15;
  if (c.kind() == models::layer_kind::dit_head) return 7;
  return 5;  // lm_head, rms_head
}

// Same type, shape and values, bit for bit.
inline bool same_values(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type() || a.shape() != b.shape()) return false;
  if (a.type() == ElementType::f32) return std::ranges::equal(a.f32(), b.f32());
  if (a.type() == ElementType::u8) return std::ranges::equal(a.u8(), b.u8());
  return std::ranges::equal(a.i32(), b.i32());
}

}  // namespace gpipe::exec::cpu::cases
