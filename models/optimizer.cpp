#include "models/optimizer.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "models/model.hpp"

namespace gpipe::models {

std::string_view to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd: return "sgd";
    case Optimizer::momentum: return "momentum";
    case Optimizer::adamw: return "adamw";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(std::string_view text) {
  for (const Optimizer o : {Optimizer::sgd, Optimizer::momentum, Optimizer::adamw}) {
    if (text == to_string(o)) return o;
  }
  return std::nullopt;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const Optimizer o : {Optimizer::sgd, Optimizer::momentum, Optimizer::adamw}) {
    names.emplace_back(to_string(o));
  }
  return names;
}

namespace {

// Bytes per parameter of the optimizer's part: the fp32 master copy of
// 16-bit weights, then its fp32 buffers.
std::int64_t optimizer_bytes_per_param(Optimizer optimizer, int element) {
  const int master = element < 4 ? 4 : 0;
  const int state = optimizer == Optimizer::adamw ? 8 : optimizer == Optimizer::momentum ? 4 : 0;
  return master + state;
}

}  // namespace

std::int64_t static_bytes_per_param(Optimizer optimizer, std::string_view dtype, bool fp32_main_grads) {
  const int element = bytes_per_element(dtype);
  return element + gradient_bytes_per_element(dtype, fp32_main_grads) + optimizer_bytes_per_param(optimizer, element);
}

int gradient_bytes_per_element(std::string_view dtype, bool fp32_main_grads) {
  const int element = bytes_per_element(dtype);
  return fp32_main_grads ? std::max(element, 4) : element;
}

StaticBytes static_bytes(Optimizer optimizer, std::string_view dtype, std::int64_t params, int zero_stage,
                         int data_parallel, bool fp32_main_grads) {
  if (zero_stage < 0 || zero_stage > 3) throw InputError(fmt::format("--zero {}: ZeRO has stages 0 to 3", zero_stage));
  if (data_parallel < 1) {
    throw InputError(fmt::format("--data-parallel {}: a pipeline has at least one replica", data_parallel));
  }
  if (params < 0) throw InputError(fmt::format("{} parameters: the count must be 0 or more", params));
  const int element = bytes_per_element(dtype);
  const std::int64_t shard = (params + data_parallel - 1) / data_parallel;
  const auto held = [&](int from_stage) { return zero_stage >= from_stage ? shard : params; };
  return {.weights = element * held(3),
          .gradients = gradient_bytes_per_element(dtype, fp32_main_grads) * held(2),
          .optimizer_state = optimizer_bytes_per_param(optimizer, element) * held(1)};
}

}  // namespace gpipe::models
