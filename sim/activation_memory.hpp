// docs/design.md's activation-memory rules: how a rank's activation bytes change at
// the start and end of each compute action of stage s (A = A_s, In = In_s):
//   start F: +A;  end F: -(A - In) when (s,m) will be recomputed;
//   start R: +(A - In);  end B: -A;
//   split backward: end I: -(A - W), end W: -W, where W = W_s is what the
//   weight gradient keeps (the profile's weight_grad_stash_bytes; all of A
//   when it does not say).
#pragma once

#include <cstdint>

#include "schedules/action.hpp"

namespace gpipe::sim {

struct StageMemory {
  std::int64_t activation_bytes = 0;     // A_s
  std::int64_t stashed_input_bytes = 0;  // In_s
  std::int64_t weight_grad_bytes = 0;    // W_s <= A_s

  bool operator==(const StageMemory&) const = default;
};

[[nodiscard]] constexpr std::int64_t memory_change_at_start(schedules::ActionKind kind,
                                                             const StageMemory& m) {
  using K = schedules::ActionKind;
  if (kind == K::F) return m.activation_bytes;
  if (kind == K::R) return m.activation_bytes - m.stashed_input_bytes;
  return 0;
}

[[nodiscard]] constexpr std::int64_t memory_change_at_end(schedules::ActionKind kind,
                                                           const StageMemory& m, bool recomputed) {
  using K = schedules::ActionKind;
  if (kind == K::F && recomputed) return -(m.activation_bytes - m.stashed_input_bytes);
  if (kind == K::B) return -m.activation_bytes;
  if (kind == K::I) return -(m.activation_bytes - m.weight_grad_bytes);
  if (kind == K::W) return -m.weight_grad_bytes;
  return 0;
}

}  // namespace gpipe::sim
