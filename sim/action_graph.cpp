#include "sim/action_graph.hpp"

#include <algorithm>

#include "schedules/dependencies.hpp"
#include "schedules/lower.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;
using schedules::Schedule;
using schedules::Stage;

constexpr int compute_slot(ActionKind k) {
  switch (k) {
    case ActionKind::F: return 0;
    case ActionKind::B: return 1;
    case ActionKind::I: return 2;
    case ActionKind::W: return 3;
    case ActionKind::R: return 4;
    case ActionKind::STEP: return 5;
    default: return -1;
  }
}

// Calls visit(action) for each compute action of the rank in the order the
// lowered schedule has them: R before each backward lowering recomputes and
// STEP of each of the rank's stages at the end, unless the schedule is
// lowered already; comm actions skipped.
template <class Visit>
void for_each_compute_action(const Schedule& s, bool lowered, int rank, const Visit& visit) {
  const auto& list = s.ranks[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (schedules::is_comm(a.kind)) continue;
    if (!lowered && schedules::is_input_backward(a.kind) &&
        schedules::recomputes(s, Rank{rank}, static_cast<int>(i))) {
      visit(Action{a.stage, ActionKind::R, a.microbatch});
    }
    visit(a);
  }
  for (int st = 0; !lowered && st < s.num_stages; ++st) {
    if (s.rank_of(Stage{st}) == Rank{rank}) visit(Action{Stage{st}, ActionKind::STEP, schedules::Microbatch{0}});
  }
}

}  // namespace

std::size_t ActionGraph::slot(Stage stage, ActionKind kind, schedules::Microbatch mb) const {
  return ((stage.at() * static_cast<std::size_t>(num_microbatches_) + mb.at()) * kComputeSlots) +
         static_cast<std::size_t>(compute_slot(kind));
}

ActionGraph::ActionGraph(const Schedule& schedule, const CostModel& costs, int inline_edges)
    : num_microbatches_(schedule.num_microbatches),
      inline_edges_(static_cast<std::size_t>(std::clamp(inline_edges, 1, 254))) {
  ids_.assign(static_cast<std::size_t>(schedule.num_stages) * kComputeSlots *
                  static_cast<std::size_t>(schedule.num_microbatches),
              -1);
  add_nodes(schedule, costs);
  add_edges(schedule);
}

void ActionGraph::add_nodes(const Schedule& s, const CostModel& costs) {
  const bool lowered = s.is_lowered();
  std::size_t total = 0;
  for (const auto& list : s.ranks) total += list.size();
  total += lowered ? 0 : static_cast<std::size_t>(s.num_stages);
  action_.reserve(total);
  rank_.reserve(total);
  duration_.reserve(total);
  rank_end_.resize(static_cast<std::size_t>(s.num_ranks));
  for (int r = 0; r < s.num_ranks; ++r) {
    for_each_compute_action(s, lowered, r, [&](const Action& a) {
      ids_[slot(a.stage, a.kind, a.microbatch)] = static_cast<int>(action_.size());
      action_.push_back(a);
      rank_.push_back(r);
      duration_.push_back(costs.duration_ns(a));
    });
    rank_end_[static_cast<std::size_t>(r)] = static_cast<int>(action_.size());
  }
}

// One pass over the dependencies, consumer by consumer, so each producer's
// consumers come in node order.
void ActionGraph::add_edges(const Schedule& s) {
  const std::size_t n = action_.size();
  const auto contains = [this](const Action& a) { return compute_slot(a.kind) >= 0 && id_of(a) >= 0; };
  inputs_.assign(n, 0);
  out_count_.assign(n, 0);
  out_.resize(n * inline_edges_);
  for (std::size_t c = 0; c < n; ++c) {
    schedules::for_each_dependency(s, false, action_[c], contains, [&](const Action& dep) {
      const auto p = static_cast<std::size_t>(id_of(dep));
      ++inputs_[c];
      if (rank_[p] != rank_[c]) ++num_messages_;
      std::uint8_t& count = out_count_[p];
      if (count < inline_edges_) {
        out_[p * inline_edges_ + count++] = static_cast<int>(c);
      } else {
        count = static_cast<std::uint8_t>(inline_edges_ + 1);  // the rest are in overflow_
        overflow_.emplace_back(static_cast<int>(p), static_cast<int>(c));
      }
    });
  }
  std::stable_sort(overflow_.begin(), overflow_.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
}

}  // namespace gpipe::sim
