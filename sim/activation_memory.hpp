// docs/design.md's activation-memory rules: how a rank's activation bytes change at
// the start and end of each compute action of stage s (A = A_s, In = In_s,
// T = T_s, the transient of Megatron's full recompute, 0 without it):
//   start F: +(A + T);  end F: -T, and -(A - In) when (s,m) will be recomputed;
//   start R: +(A - In);  start B: +T;  end B: -(A + T);
//   split backward: start I: +T, end I: -(A - W) - T, end W: -W, where W = W_s
//   is what the weight gradient keeps (the profile's weight_grad_stash_bytes;
//   all of A when it does not say).
// With full recompute A is what the checkpoints keep and T what rebuilding
// one chunk adds at worst (models/checkpointing.hpp); the executor's stage
// holds exactly that much (exec/runtime/stage.hpp).
#pragma once

#include <cstdint>

#include "schedules/action.hpp"

namespace gpipe::sim {

struct StageMemory {
  std::int64_t activation_bytes = 0;     // A_s
  std::int64_t stashed_input_bytes = 0;  // In_s
  std::int64_t weight_grad_bytes = 0;    // W_s <= A_s
  std::int64_t transient_bytes = 0;      // T_s

  bool operator==(const StageMemory&) const = default;
};

[[nodiscard]] constexpr std::int64_t memory_change_at_start(schedules::ActionKind kind,
                                                             const StageMemory& m) {
  using K = schedules::ActionKind;
  if (kind == K::F) return m.activation_bytes + m.transient_bytes;
  if (kind == K::R) return m.activation_bytes - m.stashed_input_bytes;
  if (kind == K::B || kind == K::I) return m.transient_bytes;
  return 0;
}

[[nodiscard]] constexpr std::int64_t memory_change_at_end(schedules::ActionKind kind,
                                                           const StageMemory& m, bool recomputed) {
  using K = schedules::ActionKind;
  if (kind == K::F) return -m.transient_bytes - (recomputed ? m.activation_bytes - m.stashed_input_bytes : 0);
  if (kind == K::B) return -(m.activation_bytes + m.transient_bytes);
  if (kind == K::I) return -(m.activation_bytes - m.weight_grad_bytes) - m.transient_bytes;
  if (kind == K::W) return -m.weight_grad_bytes;
  return 0;
}

}  // namespace gpipe::sim
