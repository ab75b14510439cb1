// make_device_layer(): the CPU layer made from the same model, index and seed,
// its parameters uploaded in order and their gradients zeroed, handed to the
// CUDA kind of the same name (every kind the CPU backend has: GPT's, Llama's
// and DiT's, with naive or flash attention); and what every kind shares
// (KindLayer's checks of its parameters and context).
#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "base/error.hpp"
#include "exec/cpu/layers/layer.hpp"
#include "exec/cuda/layers/checks.hpp"
#include "exec/cuda/layers/kind_base.hpp"
#include "exec/cuda/layers/layer_kinds.hpp"

namespace gpipe::exec::cuda {

namespace layers {

KindLayer::KindLayer(const models::Model& model, const models::Layer& spec, Parameters parameters,
                     const LayerContext& context)
    : DeviceLayer(spec), layout_(models::layer_layout(model, spec)), context_(context) {
  expect_context(spec, context);
  const auto& expected = layout_.parameters;
  bool ok = parameters.size() == expected.size();
  for (std::size_t i = 0; ok && i < expected.size(); ++i) {
    const DeviceParameter& p = parameters[i];
    ok = p.name == expected[i].name && p.value.type() == DeviceType::f32 &&
         p.grad.type() == DeviceType::f32 && p.value.shape() == expected[i].shape &&
         p.grad.shape() == expected[i].shape;
  }
  if (!ok) {
    throw std::logic_error(fmt::format(
        "layer {} ({}): the device parameters are not the CPU layer's {} f32 parameters in order",
        spec.name, spec.kind, expected.size()));
  }
  parameters_ = std::move(parameters);
}

DeviceLayerMaker device_layer_maker(const models::Model& model, const models::Layer& spec) {
  if (model.recompute_modules.any()) {
    throw InputError(fmt::format("model {}: the CUDA backend does not recompute modules (recompute={}) yet; "
                                 "run it on the CPU backend",
                                 model.spec, models::to_string(model.recompute_modules)));
  }
  if (model.dropout > 0) {
    throw InputError(fmt::format("model {}: the CUDA backend does not drop out (dropout={}) yet; "
                                 "run it on the CPU backend",
                                 model.spec, model.dropout));
  }
  static constexpr std::array<std::pair<std::string_view, DeviceLayerMaker>, 11> kinds{{
      {models::layer_kind::mlp_block, &make_mlp_block},
      {models::layer_kind::mse_loss, &make_mse_loss},
      {models::layer_kind::embedding, &make_embedding},
      {models::layer_kind::transformer_block, &make_transformer_block},
      {models::layer_kind::lm_head, &make_lm_head},
      {models::layer_kind::token_embedding, &make_token_embedding},
      {models::layer_kind::llama_block, &make_llama_block},
      {models::layer_kind::rms_head, &make_rms_head},
      {models::layer_kind::dit_embed, &make_dit_embed},
      {models::layer_kind::dit_block, &make_dit_block},
      {models::layer_kind::dit_head, &make_dit_head},
  }};
  for (const auto& [kind, maker] : kinds) {
    if (kind == spec.kind) return maker;
  }
  throw InputError(fmt::format(
      "make_device_layer: layer {} has kind '{}', which the CUDA backend lacks", spec.name,
      spec.kind));
}

}  // namespace layers

std::unique_ptr<DeviceLayer> make_device_layer(const models::Model& model, int index,
                                               std::uint64_t seed, const LayerContext& context) {
  // The CPU layer checks the index and the kind, and draws the weights.
  const std::unique_ptr<cpu::Layer> host = cpu::make_layer(model, index, seed);
  const models::Layer& spec = host->spec();
  const layers::DeviceLayerMaker maker = layers::device_layer_maker(model, spec);
  layers::expect_context(spec, context);
  layers::Parameters parameters;
  parameters.reserve(host->parameters().size());
  for (const cpu::Parameter& p : host->parameters()) {
    DeviceParameter& d = parameters.emplace_back();
    d.name = p.name;
    d.value =
        DeviceTensor::from_host(*context.allocator, p.value, DeviceType::f32, *context.stream);
    d.grad = DeviceTensor(*context.allocator, p.value.shape(), DeviceType::f32);
    d.grad.zero(*context.stream);
  }
  return maker(model, spec, std::move(parameters), context);
}

}  // namespace gpipe::exec::cuda
