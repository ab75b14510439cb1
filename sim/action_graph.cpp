#include "sim/action_graph.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "schedules/dependencies.hpp"
#include "schedules/gradient_reduction.hpp"
#include "schedules/lower.hpp"
#include "schedules/overlap.hpp"
#include "sim/compute_program.hpp"
#include "sim/overlap_model.hpp"

namespace gpipe::sim {
using schedules::Action;
using schedules::ActionKind;
using schedules::Schedule;
using schedules::Stage;

ActionGraph::ActionGraph(const Schedule& schedule, const CostModel& costs, int inline_edges,
                         std::optional<double> overlap_share, Edges edges)
    : num_microbatches_(schedule.num_microbatches),
      inline_edges_(static_cast<std::size_t>(std::clamp(inline_edges, 1, 254))),
      own_reductions_(schedule.data_parallel > 1) {
  ids_.assign(static_cast<std::size_t>(schedule.num_stages) * kComputeSlots *
                  static_cast<std::size_t>(schedule.num_microbatches),
              -1);
  if (schedules::has_gradient_reductions(schedule)) {
    exchange_ids_.assign(static_cast<std::size_t>(schedule.num_stages) * 2, -1);
  }
  const std::vector<std::size_t> send_waits = add_nodes(schedule, costs);
  add_edges(schedule, edges);
  add_send_waiters(schedule, send_waits);
  if (overlap_share && !schedule.overlapped.empty()) make_pairs_concurrent(schedule, *overlap_share);
}

std::vector<std::size_t> ActionGraph::add_nodes(const Schedule& s, const CostModel& costs) {
  std::vector<std::size_t> send_waits;
  const std::vector<bool> listed_step = listed_steps(s);
  // The arrays are sized once, for the most a program can hold: every action,
  // an R before each input backward, a STEP per stage and each stage's two
  // gradient-reduction actions; then cut to fit. (Growing them as nodes come
  // copied them over and over.)
  const bool lowered = s.is_lowered();
  const bool may_recompute = !lowered && s.recompute != schedules::RecomputePolicy::never;
  std::size_t bound = static_cast<std::size_t>(s.num_stages) * (schedules::has_gradient_reductions(s) ? 3 : 1);
  for (const auto& list : s.ranks) {
    bound += list.size();
    for (const Action& a : list) bound += may_recompute && schedules::is_input_backward(a.kind) ? 1 : 0;
  }
  action_.resize(bound);
  rank_.resize(bound);
  duration_.resize(bound);
  rank_end_.resize(static_cast<std::size_t>(s.num_ranks));
  Action* const action = action_.data();
  int* const rank = rank_.data();
  std::int64_t* const duration = duration_.data();
  int* const ids = ids_.data();
  std::size_t n = 0;
  const schedules::OverlapIndex pairs(s);
  for (int r = 0; r < s.num_ranks; ++r) {
    for_each_compute_action(s, lowered, pairs, listed_step, r, [&](const Action& a) {
      const int kind_slot = compute_slot(a.kind);
      if (kind_slot >= 0) ids[slot(a.stage, kind_slot, a.microbatch)] = static_cast<int>(n);
      if (schedules::is_gradient_reduction(s, a)) exchange_ids_[exchange_slot(a)] = static_cast<int>(n);
      action[n] = a;
      rank[n] = r;
      // A send wait is no work: it only waits (send_waiter).
      if (schedules::is_send_wait(a.kind)) {
        send_waits.push_back(n);
        duration[n] = 0;
      } else {
        duration[n] = costs.duration_ns(a);
      }
      ++n;
    });
    rank_end_[static_cast<std::size_t>(r)] = static_cast<int>(n);
  }
  action_.resize(n);
  rank_.resize(n);
  duration_.resize(n);
  return send_waits;
}

// One pass over the dependencies, consumer by consumer, so each producer's
// consumers come in node order.
void ActionGraph::add_edges(const Schedule& s, Edges edges) {
  const std::size_t n = action_.size();
  inputs_.assign(n, 0);
  out_count_.assign(n, 0);
  out_.resize(n * inline_edges_);
  const int* const ids = ids_.data();
  const int* const rank = rank_.data();
  int* const inputs = inputs_.data();
  std::uint8_t* const out_count = out_count_.data();
  int* const out = out_.data();
  const std::size_t width = inline_edges_;
  const bool timing_only = edges == Edges::timing;
  const auto id = [ids, this](const Action& a) {
    const int kind_slot = compute_slot(a.kind);
    return kind_slot >= 0 ? ids[slot(a.stage, kind_slot, a.microbatch)] : exchange_ids_[exchange_slot(a)];
  };
  const auto contains = [&](const Action& a) {
    return (compute_slot(a.kind) >= 0 || schedules::is_gradient_reduction(s, a)) && id(a) >= 0;
  };
  std::size_t messages = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const Action a = action_[c];
    // Send waits: add_send_waiters. Other housekeeping only follows its rank.
    if (!schedules::is_work(a.kind) && !schedules::is_gradient_reduction(s, a)) continue;
    int needs = 0;
    schedules::for_each_dependency(s, false, a, contains, [&](const Action& dep) __attribute__((always_inline)) {
      const auto p = static_cast<std::size_t>(id(dep));
      messages += rank[p] != rank[c] ? 1 : 0;
      // Nodes are numbered in program order, rank after rank: p < c on one
      // rank is an input made earlier there; but a stage's own reduction
      // ends on its reduce stream, later (the replays' deliver()).
      if (timing_only && rank[p] == rank[c] && p < c && !(own_reductions_ && reduction_on_own_rank(dep, a))) return;
      ++needs;
      std::uint8_t& count = out_count[p];
      if (count < width) {
        out[p * width + count++] = static_cast<int>(c);
      } else {
        count = static_cast<std::uint8_t>(width + 1);  // the rest are in overflow_
        overflow_.emplace_back(static_cast<int>(p), static_cast<int>(c));
      }
    });
    inputs[c] = needs;
  }
  num_messages_ = messages;
  std::stable_sort(overflow_.begin(), overflow_.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
}

// WAIT_SEND_F(s,m) waits for the activation F(s,m) sends to F(s+1,m);
// WAIT_SEND_B(s,m) for the gradient its backward sends to the backward of (s-1,m).
void ActionGraph::add_send_waiters(const Schedule& s, const std::vector<std::size_t>& send_waits) {
  if (!send_waits.empty()) waiter_.assign(action_.size(), -1);
  for (const std::size_t w : send_waits) {
    const Action& a = action_[w];
    ++inputs_[w];  // the message's arrival; never, if its receiver is missing (a stall)
    const bool forward = a.kind == ActionKind::WAIT_SEND_F;
    const Stage to{a.stage.value + (forward ? 1 : -1)};
    if (to.value < 0 || to.value >= s.num_stages || a.microbatch.value >= num_microbatches_) continue;
    int consumer = id_of(Action{to, forward ? ActionKind::F : ActionKind::I, a.microbatch});
    if (!forward && consumer < 0) consumer = id_of(Action{to, ActionKind::B, a.microbatch});
    if (consumer >= 0) waiter_[static_cast<std::size_t>(consumer)] = static_cast<int>(w);
  }
}

void ActionGraph::make_pairs_concurrent(const Schedule& s, double share) {
  const schedules::OverlapIndex pairs(s);
  pair_second_.assign(action_.size(), 0);
  for (int r = 0; r < s.num_ranks; ++r) {
    for (int i = rank_begin(r); i < rank_end(r); ++i) {
      const auto f = static_cast<std::size_t>(i);
      const auto backward = pairs.backward_of(action_[f]);
      if (!backward) continue;
      const std::string pair = schedules::to_string(schedules::OverlapPair{action_[f], *backward});
      if (i + 1 == rank_end(r) || action_[f + 1] != *backward) {
        throw InputError(fmt::format("--overlap-f-b: the overlapped pair {} does not stand side by side in "
                                     "rank {}'s program",
                                     pair, r));
      }
      if (backward->stage == action_[f].stage && backward->microbatch == action_[f].microbatch) {
        throw InputError(fmt::format("--overlap-f-b: the overlapped pair {} cannot run concurrently: its "
                                     "backward needs its forward",
                                     pair));
      }
      pair_second_[f + 1] = 1;
      duration_[f] = overlapped_duration_ns(duration_[f], share);
      duration_[f + 1] = overlapped_duration_ns(duration_[f + 1], share);
    }
  }
}

}  // namespace gpipe::sim
