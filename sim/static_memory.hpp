// Static memory of a rank: parameters, gradients and optimizer state, which
// stay for the whole step whatever the schedule. Bytes per parameter:
//   weights and gradients in the run's dtype; with a 16-bit dtype, an fp32
//   master copy of the weights (mixed precision); then the optimizer's fp32
//   state: none for sgd, one buffer for momentum, two (m, v) for adamw.
//   fp32:  sgd 8, momentum 12, adamw 16.   bf16/fp16: sgd 8, momentum 12, adamw 16
//   (2 + 2 + 4 master, + 4 per state buffer).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpipe::sim {

enum class Optimizer { sgd, momentum, adamw };

[[nodiscard]] std::string_view to_string(Optimizer optimizer);
[[nodiscard]] std::optional<Optimizer> parse_optimizer(std::string_view text);

// Bytes of one element of the profile's dtype ("fp32", "bf16", "fp16");
// throws InputError naming the dtype otherwise.
[[nodiscard]] int dtype_bytes(std::string_view dtype);

[[nodiscard]] std::int64_t static_bytes_per_param(Optimizer optimizer, std::string_view dtype);

}  // namespace gpipe::sim
