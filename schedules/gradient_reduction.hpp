// What a stage's gradients go through between its last backward and its
// STEP (docs/design.md "Tied embeddings", "Data parallelism"):
// - a tied embedding's exchange between the first and the last stage
//   (tied_gradient.hpp);
// - with data parallelism (Schedule::data_parallel = D > 1), the reduction of
//   every stage's gradients over its data-parallel group (the same stage of
//   the D replicas): an all-reduce, or a reduce-scatter under ZeRO.
// REDUCE_GRAD(s) starts them once the stage's gradients are final: lowering
// puts it right after the stage's last backward in its rank's list, so that
// the reduction overlaps what the rank computes after (the drain, the rank's
// other stages). WAIT_REDUCE_GRAD(s) waits for them: at the end of the
// rank's list, each reducing stage's in stage order, before the STEPs.
#pragma once

#include <cstddef>
#include <vector>

#include "schedules/schedule.hpp"
#include "schedules/tied_gradient.hpp"

namespace gpipe::schedules {

// Whether stage s reduces its gradients before its STEP.
[[nodiscard]] inline bool reduces_gradients(const Schedule& s, Stage stage) {
  return s.data_parallel > 1 || tied_partner(s, stage).has_value();
}

// Whether any stage of the schedule does.
[[nodiscard]] inline bool has_gradient_reductions(const Schedule& s) {
  return s.data_parallel > 1 || (s.tied_embedding && s.num_stages > 1);
}

// Whether `a` is a REDUCE_GRAD or WAIT_REDUCE_GRAD of a stage that reduces:
// it moves data (other housekeeping only orders a rank).
[[nodiscard]] inline bool is_gradient_reduction(const Schedule& s, const Action& a) {
  return (a.kind == ActionKind::REDUCE_GRAD || a.kind == ActionKind::WAIT_REDUCE_GRAD) &&
         reduces_gradients(s, a.stage);
}

// For each stage, the index in `list` (one rank's actions) of its last
// backward (B, I or W), or -1 where the list holds none of the stage's.
[[nodiscard]] inline std::vector<int> last_backward_index(const Schedule& s, const std::vector<Action>& list) {
  std::vector<int> last(static_cast<std::size_t>(s.num_stages), -1);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const ActionKind k = list[i].kind;
    if (k == ActionKind::B || k == ActionKind::I || k == ActionKind::W) last[list[i].stage.at()] = static_cast<int>(i);
  }
  return last;
}

// Calls visit(action) for what lowering puts at the end of the rank's list
// before the STEPs: the REDUCE_GRAD of each reducing stage of the rank that
// has no backward there (`last_backward`, from last_backward_index), then the
// WAIT_REDUCE_GRAD of each reducing stage, in stage order.
template <class Visit>
void for_each_reduction_at_end(const Schedule& s, Rank rank, const std::vector<int>& last_backward,
                               const Visit& visit) {
  if (!has_gradient_reductions(s)) return;
  for (const ActionKind kind : {ActionKind::REDUCE_GRAD, ActionKind::WAIT_REDUCE_GRAD}) {
    for (int st = 0; st < s.num_stages; ++st) {
      const Stage stage{st};
      if (s.rank_of(stage) != rank || !reduces_gradients(s, stage)) continue;
      if (kind == ActionKind::REDUCE_GRAD && last_backward[stage.at()] >= 0) continue;
      visit(Action{stage, kind, Microbatch{0}});
    }
  }
}

}  // namespace gpipe::schedules
