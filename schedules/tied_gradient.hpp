// A tied embedding (llama's tied=1; docs/design.md "Tied embeddings"): the first
// stage and the last hold one matrix, the token table and the unembedding,
// each its own copy. Before either steps, the two gradients are summed, so
// that both copies take the same update: each stage posts its gradient to the
// other (REDUCE_GRAD, torch's name for starting a stage's gradient reduction)
// and waits for the other's (WAIT_REDUCE_GRAD), then STEP adds it to its own.
// Lowering places the two as every gradient reduction's
// (gradient_reduction.hpp). With a single stage there is nothing to
// exchange: the stage sums its two layers' gradients itself.
#pragma once

#include <optional>

#include "schedules/schedule.hpp"

namespace gpipe::schedules {

// The stage that shares a matrix with `stage`: the last for stage 0, stage 0
// for the last; none for the others, for a single stage, or without a tie.
[[nodiscard]] inline std::optional<Stage> tied_partner(const Schedule& s, Stage stage) {
  if (!s.tied_embedding || s.num_stages < 2) return std::nullopt;
  const int last = s.num_stages - 1;
  if (stage.value == 0) return Stage{last};
  if (stage.value == last) return Stage{0};
  return std::nullopt;
}

// Whether `a` is a REDUCE_GRAD or WAIT_REDUCE_GRAD of the exchange, which
// moves data between the tied stages (other housekeeping only orders a rank).
[[nodiscard]] inline bool is_tied_exchange(const Schedule& s, const Action& a) {
  return (a.kind == ActionKind::REDUCE_GRAD || a.kind == ActionKind::WAIT_REDUCE_GRAD) &&
         tied_partner(s, a.stage).has_value();
}

}  // namespace gpipe::schedules
