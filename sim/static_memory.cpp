#include "sim/static_memory.hpp"

#include <fmt/format.h>

#include "schedules/error.hpp"

namespace gpipe::sim {

std::string_view to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::sgd: return "sgd";
    case Optimizer::momentum: return "momentum";
    case Optimizer::adamw: return "adamw";
  }
  return "?";
}

std::optional<Optimizer> parse_optimizer(std::string_view text) {
  if (text == "sgd") return Optimizer::sgd;
  if (text == "momentum") return Optimizer::momentum;
  if (text == "adamw") return Optimizer::adamw;
  return std::nullopt;
}

int dtype_bytes(std::string_view dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  throw InputError(fmt::format("dtype '{}': unknown (fp32, bf16, fp16)", dtype));
}

std::int64_t static_bytes_per_param(Optimizer optimizer, std::string_view dtype) {
  const int element = dtype_bytes(dtype);
  const int master = element < 4 ? 4 : 0;  // fp32 copy of 16-bit weights
  const int state = optimizer == Optimizer::adamw ? 8 : optimizer == Optimizer::momentum ? 4 : 0;
  return 2 * element + master + state;
}

}  // namespace gpipe::sim
