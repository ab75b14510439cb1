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
// other stages); with Schedule::reduce_after_backward, after the rank's last
// backward (ReductionPlaces). WAIT_REDUCE_GRAD(s) waits for them: at the end of the
// rank's list, each reducing stage's in stage order, before the STEPs.
#pragma once

#include <algorithm>
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

// Where lowering puts the REDUCE_GRADs of one rank's list: each reducing
// stage's right after its last backward, or with Schedule::reduce_after_backward
// every reducing stage's after the rank's last backward, in the order their
// last backwards come. lower() and the simulator's programs (compute_program,
// direct_replay) ask it alike.
class ReductionPlaces {
 public:
  // Nothing is placed where the schedule reduces nothing.
  ReductionPlaces(const Schedule& s, const std::vector<Action>& list) : s_(&s) {
    if (!has_gradient_reductions(s)) return;
    last_backward_ = last_backward_index(s, list);
    if (!s.reduce_after_backward) return;
    for (std::size_t st = 0; st < last_backward_.size(); ++st) {
      if (last_backward_[st] < 0 || !reduces_gradients(s, Stage{static_cast<int>(st)})) continue;
      in_order_.push_back(Stage{static_cast<int>(st)});
      rank_last_ = std::max(rank_last_, last_backward_[st]);
    }
    std::sort(in_order_.begin(), in_order_.end(),
              [this](Stage a, Stage b) { return last_backward_[a.at()] < last_backward_[b.at()]; });
  }

  // Whether the schedule reduces at all.
  [[nodiscard]] bool any() const { return !last_backward_.empty(); }
  // last_backward_index's answer (empty when nothing reduces).
  [[nodiscard]] const std::vector<int>& last_backward() const { return last_backward_; }

  // Calls visit(stage) for each REDUCE_GRAD that goes right after list[i], of stage `stage`.
  template <class Visit>
  void after(int i, Stage stage, const Visit& visit) const {
    if (last_backward_.empty()) return;
    if (!s_->reduce_after_backward) {
      if (last_backward_[stage.at()] == i && reduces_gradients(*s_, stage)) visit(stage);
      return;
    }
    if (i != rank_last_) return;
    for (const Stage st : in_order_) visit(st);
  }

 private:
  const Schedule* s_;
  std::vector<int> last_backward_;
  int rank_last_ = -1;
  std::vector<Stage> in_order_;
};

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
