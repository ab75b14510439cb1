// The mlp family and its two layer kinds, mlp_block and mse_loss (model.hpp
// gives what they compute and keep for the backward).
#include <cassert>
#include <utility>

#include <fmt/format.h>

#include "models/families.hpp"
#include "models/layer_layout.hpp"

namespace gpipe::models {

Layer mlp_block_layer(std::string name, std::int64_t hidden, std::int64_t ffn_width) {
  const std::int64_t h = hidden;
  const std::int64_t f = ffn_width;
  // Two Linears, H->F and F->H: 2*H*F FLOPs each per sample.
  const double gemms = 4.0 * static_cast<double>(h) * static_cast<double>(f);
  Layer layer;
  layer.name = std::move(name);
  layer.kind = std::string(layer_kind::mlp_block);
  layer.ffn_width = f;
  layer.fwd_flops = gemms;
  layer.bwd_input_flops = gemms;
  layer.bwd_weight_flops = gemms;
  layer.input_elems = h;
  layer.output_elems = h;
  count_from_layout(layer, layer_layout(layer.kind, {.hidden = h, .ffn_width = f}));
  return layer;
}

Layer mse_loss_layer(std::int64_t hidden) {
  Layer layer;
  layer.name = "loss";
  layer.kind = std::string(layer_kind::mse_loss);
  layer.input_elems = hidden;
  layer.target_elems = hidden;
  layer.output_elems = 1;  // the per-sample loss
  count_from_layout(layer, layer_layout(layer.kind, {.hidden = hidden}));
  return layer;
}

Model build_residual_mlp(std::string_view family, int layers, int hidden,
                         const std::function<std::int64_t(int)>& ffn_width) {
  assert(layers >= 1 && hidden >= 1);
  Model model;
  model.spec = fmt::format("{}:layers={},hidden={}", family, layers, hidden);
  model.family = std::string(family);
  model.num_blocks = layers;
  model.hidden = hidden;
  for (int i = 0; i < layers; ++i) {
    model.layers.push_back(mlp_block_layer(fmt::format("block{}", i), hidden, ffn_width(i)));
  }
  model.layers.push_back(mse_loss_layer(hidden));
  return model;
}

Model build_mlp(int layers, int hidden) {
  return build_residual_mlp("mlp", layers, hidden,
                            [hidden](int) { return 4 * static_cast<std::int64_t>(hidden); });
}

}  // namespace gpipe::models
