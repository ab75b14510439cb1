// Compute-only schedules built by hand for the executor's tests of a split
// backward (I/W) and of several stages per rank, independent of the
// generators of those families (schedules/generate.*), so that the runtime
// is tested against orders written out here in full:
//
//   split_backward(1f1b K=2 M=2, right_after_input)   rank 0: 0F0 0F1 0I0 0W0 0I1 0W1
//   split_backward(..., after_next_action)            rank 0: 0F0 0F1 0I0 0I1 0W0 0W1
//   split_backward(..., at_the_end)                   (every W after the rank's last I)
//
//   looped_bfs(K=2, M=2): stage s on rank s mod K
//     rank 0: 0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0
//     rank 1: 1F0 1F1 3F0 3F1 3B1 3B0 1B1 1B0
//
//   v_shape(K=2, M=2): rank r holds stages r and 2K-1-r (zbv's placement), so
//   the loss stage 3 lives on rank 0 with stage 0
//     rank 0: 0F0 0F1 3F0 3F1 3B1 3B0 0B1 0B0
//     rank 1: 1F0 1F1 2F0 2F1 2B1 2B0 1B1 1B0
//
// Both multi-stage orders are deadlock-free: every rank runs all forwards of
// its first stage before any of its second, and the backwards come back in
// the reverse order of the stages.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "schedules/action.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::exec::hand_schedules {

using schedules::Action;
using schedules::ActionKind;
using schedules::make_action;

// Where a split backward puts W(s,m), relative to its I(s,m).
enum class WeightPlacement {
  right_after_input,  // I W: the full backward in two actions
  after_next_action,  // after the rank's next compute action (a zero-bubble-like deferral)
  at_the_end,         // all after the rank's last action, in the order of their I's
};

// `schedule` with every B(s,m) replaced by I(s,m), and W(s,m) placed as `where` says.
inline schedules::Schedule split_backward(schedules::Schedule schedule, WeightPlacement where) {
  schedule.name += "-split";
  for (auto& list : schedule.ranks) {
    std::vector<Action> out;
    std::vector<Action> waiting;  // W's not placed yet
    for (const Action& a : list) {
      if (a.kind != ActionKind::B) {
        out.push_back(a);
        if (where == WeightPlacement::after_next_action && !waiting.empty()) {
          out.insert(out.end(), waiting.begin(), waiting.end());
          waiting.clear();
        }
        continue;
      }
      const Action input{a.stage, ActionKind::I, a.microbatch};
      const Action weight{a.stage, ActionKind::W, a.microbatch};
      out.push_back(input);
      if (where == WeightPlacement::right_after_input) {
        out.push_back(weight);
      } else if (where == WeightPlacement::after_next_action && !waiting.empty()) {
        out.insert(out.end(), waiting.begin(), waiting.end());
        waiting.assign(1, weight);
      } else {
        waiting.push_back(weight);
      }
    }
    out.insert(out.end(), waiting.begin(), waiting.end());
    list = std::move(out);
  }
  return schedule;
}

// Two stages per rank: rank r holds `first(r)` and `second(r)`; its list is
// every F of the first, every F of the second, then the B's of the second
// and of the first, micro-batches in reverse.
template <class First, class Second>
schedules::Schedule two_stages_per_rank(std::string name, int ranks, int microbatches, First first,
                                        Second second) {
  schedules::Schedule s;
  s.name = std::move(name);
  s.num_ranks = ranks;
  s.num_stages = 2 * ranks;
  s.num_microbatches = microbatches;
  s.stage_to_rank.resize(static_cast<std::size_t>(2 * ranks));
  s.ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const int a = first(r);
    const int b = second(r);
    s.stage_to_rank[static_cast<std::size_t>(a)] = schedules::Rank{r};
    s.stage_to_rank[static_cast<std::size_t>(b)] = schedules::Rank{r};
    auto& list = s.ranks[static_cast<std::size_t>(r)];
    for (int stage : {a, b}) {
      for (int m = 0; m < microbatches; ++m) list.push_back(make_action(stage, ActionKind::F, m));
    }
    for (int stage : {b, a}) {
      for (int m = microbatches - 1; m >= 0; --m) list.push_back(make_action(stage, ActionKind::B, m));
    }
  }
  return s;
}

// Interleaved placement, V = 2: stage s on rank s mod K, in a looped-BFS order.
inline schedules::Schedule looped_bfs(int ranks, int microbatches) {
  return two_stages_per_rank(
      "hand-looped-bfs", ranks, microbatches, [](int r) { return r; },
      [ranks](int r) { return r + ranks; });
}

// V-shaped placement, V = 2: rank r holds stages r and 2K-1-r.
inline schedules::Schedule v_shape(int ranks, int microbatches) {
  return two_stages_per_rank(
      "hand-v-shape", ranks, microbatches, [](int r) { return r; },
      [ranks](int r) { return 2 * ranks - 1 - r; });
}

}  // namespace gpipe::exec::hand_schedules
