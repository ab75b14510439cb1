// The optimizer a model trains with, and the static memory it implies: the
// parameters, gradients and optimizer state, which stay for the whole step
// whatever the schedule. Bytes per parameter:
//   weights and gradients in the run's dtype; with a 16-bit dtype, an fp32
//   master copy of the weights (mixed precision); then the optimizer's fp32
//   state: none for sgd, one buffer for momentum, two (m, v) for adamw.
//   fp32:  sgd 8, momentum 12, adamw 16.   bf16/fp16: sgd 8, momentum 12, adamw 16
//   (2 + 2 + 4 master, + 4 per state buffer).
//   With fp32 main gradients (Megatron-LM's main_grad buffers,
//   --accumulate-allreduce-grads-in-fp32, as Megatron-LM does for bf16; Llama
//   3's fp32 gradient accumulation and reduce-scatter) the gradients are 4
//   bytes whatever the dtype: bf16 adamw 18, Megatron's "18 bytes a parameter",
//   and with ZeRO 1 (its distributed optimizer) 6 + 12 / D.
// The simulator prices static memory with it and the executor steps with it,
// so it lives here, below both, next to models::param_bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::models {

enum class Optimizer { sgd, momentum, adamw };

[[nodiscard]] std::string_view to_string(Optimizer optimizer);
[[nodiscard]] std::optional<Optimizer> parse_optimizer(std::string_view text);
// The names parse_optimizer() accepts, in enum order ("sgd", "momentum", "adamw"), for flag checks.
[[nodiscard]] std::vector<std::string> optimizer_names();

// Static bytes per parameter for `optimizer` in `dtype` (a profile's dtype
// name, bytes_per_element(std::string_view)); InputError for an unknown dtype.
[[nodiscard]] std::int64_t static_bytes_per_param(Optimizer optimizer, std::string_view dtype,
                                                  bool fp32_main_grads = false);
// The bytes of one gradient element: the dtype's, or 4 with fp32 main gradients.
[[nodiscard]] int gradient_bytes_per_element(std::string_view dtype, bool fp32_main_grads);

// The same split three ways, for `params` parameters on one GPU of a
// data-parallel group of `data_parallel` replicas that shards them with ZeRO
// stage `zero` (Rajbhandari et al., arXiv 1910.02054): stage 1 shards the
// optimizer state (the fp32 master copy with it), 2 the gradients too, 3 the
// weights too; a sharded part keeps ceil(params / data_parallel) of them.
// With bf16 and AdamW (2 + 2 + 12 bytes) and 7.5 B parameters over 64 GPUs:
// 120, 31.4, 16.6 and 1.88 GB for stages 0 to 3, the paper's Figure 1.
// InputError for a stage outside 0..3, data_parallel < 1 or params < 0.
struct StaticBytes {
  std::int64_t weights = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer_state = 0;  // the fp32 master copy of 16-bit weights, then the optimizer's buffers
  [[nodiscard]] std::int64_t total() const { return weights + gradients + optimizer_state; }
  bool operator==(const StaticBytes&) const = default;
};
[[nodiscard]] StaticBytes static_bytes(Optimizer optimizer, std::string_view dtype, std::int64_t params,
                                       int zero_stage = 0, int data_parallel = 1, bool fp32_main_grads = false);

}  // namespace gpipe::models
