#include "models/optimizer.hpp"

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

std::int64_t static_bytes_per_param(Optimizer optimizer, std::string_view dtype) {
  const int element = bytes_per_element(dtype);
  const int master = element < 4 ? 4 : 0;  // fp32 copy of 16-bit weights
  const int state = optimizer == Optimizer::adamw ? 8 : optimizer == Optimizer::momentum ? 4 : 0;
  return 2 * element + master + state;
}

}  // namespace gpipe::models
