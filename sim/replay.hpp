// The books both of the engine's replays keep (fifo_replay.hpp,
// shared_replay.hpp): each rank's compute stream (its next action and when it
// is free), how many inputs each action still waits for and when the latest
// arrived, activation memory (activation_memory.hpp), busy time, the makespan
// and the recorded timeline. A replay decides in which order actions start and
// when messages arrive; Replay applies docs/design.md's rules for everything else:
// an action starts at max(end of the previous action on its rank, arrival of
// its latest input), and memory and message prices are asked of the models as
// the action runs rather than stored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/action_graph.hpp"
#include "sim/activation_memory.hpp"
#include "sim/cost_model.hpp"
#include "sim/engine.hpp"
#include "sim/huge_page_allocator.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {

class Replay {
 public:
  // `overlap_share`: how overlapped pairs run (overlap_model.hpp); none: in
  // turn. `edges`: the graph's (ActionGraph::Edges); the engine's replays
  // need only the timing ones, and end() then hands on only those.
  // `costs` must outlive it: it keeps a reference (and asks it for memory
  // as the replay runs), so a temporary, destroyed at the end of the
  // declaration, is refused.
  Replay(const schedules::Schedule& schedule, const CostModel& costs, bool record,
         std::optional<double> overlap_share = std::nullopt, ActionGraph::Edges edges = ActionGraph::Edges::all);
  Replay(const schedules::Schedule& schedule, const CostModel&& costs, bool record,
         std::optional<double> overlap_share = std::nullopt,
         ActionGraph::Edges edges = ActionGraph::Edges::all) = delete;
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  [[nodiscard]] const ActionGraph& graph() const { return graph_; }
  [[nodiscard]] const CostModel& costs() const { return costs_; }
  [[nodiscard]] int num_ranks() const { return num_ranks_; }
  // The rank's next node to run; graph().rank_end(rank) once it has run its program.
  [[nodiscard]] int next(int rank) const { return next_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] bool inputs_delivered(std::size_t node) const { return pending_[node] == 0; }

  // Whether the rank, waiting at `node` (its next), may start it: every input
  // delivered, and for a concurrent pair (ActionGraph::starts_pair) those of
  // its backward too.
  [[nodiscard]] bool can_start(std::size_t node) const {
    return pending_[node] == 0 && (!graph_.starts_pair(node) || pending_[node + 1] == 0);
  }
  [[nodiscard]] bool pair_can_start(std::size_t node) const { return pending_[node] == 0 && pending_[node + 1] == 0; }
  // Whether an input arriving at `node` is what the rank waits for.
  [[nodiscard]] bool waits_at(int rank, std::size_t node) const {
    const auto next = static_cast<std::size_t>(next_[static_cast<std::size_t>(rank)]);
    return next == node || (graph_.has_pairs() && graph_.ends_pair(node) && next + 1 == node);
  }

  // Starts `node`, the rank's next, with every input delivered: at the end of
  // the rank's previous action or at its latest input's arrival, whichever is
  // later. Returns its end.
  std::int64_t start(int rank, std::size_t node) {
    const auto r = static_cast<std::size_t>(rank);
    const std::int64_t duration = graph_.duration_ns(node);
    const std::int64_t start = std::max(rank_free_[r], ready_[node]);
    const std::int64_t end = start + duration;
    begin(rank, node, start);
    busy_[r] += duration;
    makespan_ = std::max(makespan_, end);
    return end;
  }

  // Starts a concurrent pair, `node` (the rank's next) and the one after it,
  // together once both have their inputs (overlap_model.hpp). The rank is busy
  // for the longer of the two. Returns the two ends.
  std::pair<std::int64_t, std::int64_t> start_pair(int rank, std::size_t node) {
    const auto r = static_cast<std::size_t>(rank);
    const std::int64_t start = std::max({rank_free_[r], ready_[node], ready_[node + 1]});
    const std::int64_t first = graph_.duration_ns(node);
    const std::int64_t second = graph_.duration_ns(node + 1);
    begin(rank, node, start);
    begin(rank, node + 1, start);
    busy_[r] += std::max(first, second);
    makespan_ = std::max(makespan_, start + std::max(first, second));
    return {start + first, start + second};
  }

  // Ends `node` at `end`: frees its memory, moves the rank on, and hands its
  // output on by calling deliver(producer, consumer, end) for each consumer.
  // The two of a concurrent pair end in time order, whichever it is, so that
  // the rank is free at the later end and has moved past both.
  template <class Deliver>
  void end(int rank, std::size_t node, std::int64_t end, const Deliver& deliver) {
    const auto r = static_cast<std::size_t>(rank);
    rank_free_[r] = end;
    ++next_[r];
    const schedules::Action& a = graph_.action(node);
    using schedules::ActionKind;
    if (a.kind == ActionKind::B || a.kind == ActionKind::I || a.kind == ActionKind::W) {
      add_memory(rank, end, memory_change_at_end(a.kind, stage_memory(a), false));
    } else if (a.kind == ActionKind::F) {
      add_memory(rank, end, memory_change_at_end(a.kind, stage_memory(a), graph_.recomputed(a)));
    }
    const int id = static_cast<int>(node);
    graph_.for_each_consumer(id, [&](int consumer) { deliver(id, consumer, end); });
  }

  // One input of `consumer` has arrived at `at`. True when it was the last
  // one it waited for: the replay may then start it once its rank is free.
  bool arrive(int consumer, std::int64_t at) {
    const auto c = static_cast<std::size_t>(consumer);
    ready_[c] = std::max(ready_[c], at);
    return --pending_[c] == 0;
  }

  // A message between nodes on different ranks took [start, end] on its link.
  void transfer(int producer, int consumer, std::int64_t start, std::int64_t end) {
    makespan_ = std::max(makespan_, end);
    if (record_) record_transfer(producer, consumer, start, end);
  }

  // The result once the replay is over. Throws RunError naming the first rank
  // that did not run its whole program (a stall).
  [[nodiscard]] SimResult finish(const schedules::Schedule& schedule, const SimOptions& options);

 private:
  [[nodiscard]] StageMemory stage_memory(const schedules::Action& a) const {
    return costs_.stage_memory(a.stage, a.microbatch);
  }
  void begin(int rank, std::size_t node, std::int64_t start) {
    if (record_) start_ns_[node] = start;
    const schedules::Action& a = graph_.action(node);
    using schedules::ActionKind;
    if (a.kind == ActionKind::F || a.kind == ActionKind::R || a.kind == ActionKind::B || a.kind == ActionKind::I) {
      add_memory(rank, start, memory_change_at_start(a.kind, stage_memory(a)));
    }
  }
  void add_memory(int rank, std::int64_t at, std::int64_t change) {
    if (change == 0) return;
    const auto r = static_cast<std::size_t>(rank);
    memory_[r] += change;
    peak_memory_[r] = std::max(peak_memory_[r], memory_[r]);
    if (record_) timeline_.memory.push_back({schedules::Rank{rank}, at, memory_[r]});
  }
  void record_transfer(int producer, int consumer, std::int64_t start, std::int64_t end);

  const CostModel& costs_;
  int num_ranks_;
  bool record_;
  ActionGraph graph_;
  BigVector<int> pending_;            // inputs not yet delivered, per node
  BigVector<std::int64_t> ready_;     // when the latest delivered input arrived, per node
  BigVector<std::int64_t> start_ns_;  // when each node started; only when recording

  std::vector<int> next_;                // per rank: the next node to run
  std::vector<std::int64_t> rank_free_;  // per rank: end of its last action
  std::vector<std::int64_t> memory_;
  std::vector<std::int64_t> peak_memory_;
  std::vector<std::int64_t> busy_;  // compute time per rank, ns
  std::int64_t makespan_ = 0;
  timelines::Timeline timeline_;
};

}  // namespace gpipe::sim
