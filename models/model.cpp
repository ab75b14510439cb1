#include "models/model.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::models {

int bytes_per_element(std::string_view dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16" || dtype == "fp8") return 2;
  throw InputError(fmt::format("dtype '{}': unknown (fp32, bf16, fp16, fp8)", dtype));
}

int bytes_per_element(DType dtype) { return bytes_per_element(to_string(dtype)); }

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
  }
  return "bf16";
}

std::string_view to_string(Attention attention) {
  return attention == Attention::flash ? "flash" : "naive";
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "fp32") return DType::fp32;
  if (text == "bf16") return DType::bf16;
  if (text == "fp8") return DType::fp8;
  return std::nullopt;
}

std::string_view dtype_names() { return "fp32, bf16, fp8"; }

namespace {

void check_micro_batch_size(const Layer& layer, int micro_batch_size) {
  if (micro_batch_size < 1) {
    throw InputError(fmt::format("layer '{}': micro-batch size must be at least 1, got {}",
                                 layer.name, micro_batch_size));
  }
}

}  // namespace

LayerBytes bytes_at(const Layer& layer, int micro_batch_size, DType dtype) {
  check_micro_batch_size(layer, micro_batch_size);
  const std::int64_t b = micro_batch_size;
  const std::int64_t e = bytes_per_element(dtype);
  return LayerBytes{
      .input_bytes = b * (layer.input_elems * e + layer.input_index_bytes),
      .output_bytes = b * layer.output_elems * e,
      .activation_bytes = b * (layer.activation_elems * e + layer.activation_fixed_bytes),
      .state_bytes = b * layer.state_elems * e,
  };
}

std::int64_t weight_grad_stash_bytes_at(const Layer& layer, int micro_batch_size, DType dtype) {
  check_micro_batch_size(layer, micro_batch_size);
  const std::int64_t b = micro_batch_size;
  const std::int64_t e = bytes_per_element(dtype);
  return b * (layer.weight_grad_stash_elems * e + layer.weight_grad_stash_fixed_bytes);
}

std::int64_t param_bytes(const Layer& layer, DType dtype) {
  return layer.params * bytes_per_element(dtype);
}

std::int64_t Model::params() const {
  std::int64_t total = 0;
  for (const Layer& layer : layers) total += layer.params;
  // The tied matrix is in the first layer's count and the last's.
  if (tied && !layers.empty()) total -= layers.front().tied_elems;
  return total;
}

}  // namespace gpipe::models
