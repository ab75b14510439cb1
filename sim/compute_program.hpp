// A rank's compute program as the engine runs it: the schedule's work in
// order, with what lowering would add and without the comm actions. Both the
// graph replay (action_graph.hpp) and the direct replay (direct_replay.hpp)
// walk it, so that they run the same program.
#pragma once

#include <vector>

#include "schedules/gradient_reduction.hpp"
#include "schedules/lower.hpp"
#include "schedules/overlap.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::sim {

// Whether each stage's STEP is listed in the schedule (else the program ends
// with it).
[[nodiscard]] inline std::vector<bool> listed_steps(const schedules::Schedule& s) {
  std::vector<bool> listed(static_cast<std::size_t>(s.num_stages), false);
  for (const auto& list : s.ranks) {
    for (const schedules::Action& a : list) {
      if (a.kind == schedules::ActionKind::STEP) listed[a.stage.at()] = true;
    }
  }
  return listed;
}

// Calls visit(action) for each action of the rank's compute stream, in the
// order the lowered schedule has them: unless the schedule is lowered already,
// R before each backward lowering recomputes (before the pair, for the
// backward of an overlapped pair, as lower() puts it); each reducing stage's
// REDUCE_GRAD after its last backward and WAIT_REDUCE_GRAD at the end
// (gradient_reduction.hpp), and STEP of each of the rank's stages at the end
// unless the schedule lists them; comm actions skipped.
template <class Visit>
void for_each_compute_action(const schedules::Schedule& s, bool lowered, const schedules::OverlapIndex& pairs,
                             const std::vector<bool>& listed_step, int rank, const Visit& visit) {
  using schedules::Action;
  using schedules::ActionKind;
  const auto& list = s.ranks[static_cast<std::size_t>(rank)];
  // (The policy first: recomputes() is a call, and most schedules never recompute.)
  const bool may_recompute = !lowered && s.recompute != schedules::RecomputePolicy::never;
  const auto recompute = [&](std::size_t i) {
    const Action& a = list[i];
    if (may_recompute && schedules::is_input_backward(a.kind) &&
        schedules::recomputes(s, schedules::Rank{rank}, static_cast<int>(i))) {
      visit(Action{a.stage, ActionKind::R, a.microbatch});
    }
  };
  // (A lowered schedule lists its reductions; one without STEPs is not lowered.)
  const bool reductions = !lowered && schedules::has_gradient_reductions(s);
  const schedules::ReductionPlaces places =
      reductions ? schedules::ReductionPlaces(s, list) : schedules::ReductionPlaces(s, {});
  const auto reduce_after = [&](std::size_t i) {
    places.after(static_cast<int>(i), list[i].stage, [&](schedules::Stage st) {
      visit(Action{st, ActionKind::REDUCE_GRAD, schedules::Microbatch{0}});
    });
  };
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (schedules::is_comm(a.kind)) continue;
    if (pairs.pair_at(list, i)) {
      recompute(i + 1);
      visit(a);
      visit(list[i + 1]);
      reduce_after(i);
      reduce_after(++i);
      continue;
    }
    recompute(i);
    visit(a);
    reduce_after(i);
  }
  if (reductions) schedules::for_each_reduction_at_end(s, schedules::Rank{rank}, places.last_backward(), visit);
  for (int st = 0; st < s.num_stages; ++st) {
    if (s.rank_of(schedules::Stage{st}) == schedules::Rank{rank} && !listed_step[static_cast<std::size_t>(st)]) {
      visit(Action{schedules::Stage{st}, ActionKind::STEP, schedules::Microbatch{0}});
    }
  }
}

}  // namespace gpipe::sim
