// The engine's view of a schedule: the compute program of each rank (what
// lowering gives, less the comm actions) as a dependency graph of compact
// parallel arrays, built in one pass over the dependencies
// (schedules::for_each_dependency) without copying or lowering the schedule.
// Nodes are numbered rank after rank, each rank's in program order: the
// engine runs a rank as far as it can, so that order is also the order in
// which it touches them.
//
// Besides the work (F, B, I, W, R, STEP) the program holds, in order, what
// torch's files add to the compute stream: housekeeping (UNSHARD, ...), priced
// by the cost model like work, and send waits, which take no time and wait
// for one input: the arrival of their message at its receiver (send_waiter).
// REDUCE_GRAD and WAIT_REDUCE_GRAD take no time (gradient_reduction.hpp): a
// tied embedding's wait waits for the other stage's gradient, a message
// between them, and with data parallelism for the stage's own reduction, a
// span on its rank's reduce stream (reduction_on_own_rank).
// A file without STEP (torch's leave the optimizer to the caller) gets STEP of
// each stage at the end of its rank's program, as lowering would add it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "schedules/action.hpp"
#include "schedules/schedule.hpp"
#include "sim/cost_model.hpp"
#include "sim/huge_page_allocator.hpp"

namespace gpipe::sim {

class ActionGraph {
 public:
  // Out-edges are kept in place, `inline_edges` per node: the dependency
  // rules give a producer at most three consumers (F(s,m) -> F(s+1,m),
  // R(s,m), B(s,m)); any beyond go to an overflow list, so other rules would
  // still run (tests use fewer to exercise it).
  static constexpr int kInlineEdges = 3;

  // Which of the rules' edges the graph keeps. An input made earlier on the
  // consumer's own rank is in by the time that rank is free for the consumer
  // (a rank runs its program in order, one action, or one concurrent pair,
  // after the other), so it never decides a start: `timing` leaves those
  // out, and with them about half a pipeline's edges (F to its own B, every
  // backward to STEP) and all of a single rank's. `all` keeps every edge
  // the rules give.
  enum class Edges { all, timing };

  // Asks the cost model for every duration, in program order, rank after rank.
  // With an overlap share (overlap_model.hpp), the overlapped pairs run
  // concurrently; throws InputError for a pair that cannot (not side by side
  // in the rank's program, or its backward needs its forward).
  ActionGraph(const schedules::Schedule& schedule, const CostModel& costs, int inline_edges = kInlineEdges,
              std::optional<double> overlap_share = std::nullopt, Edges edges = Edges::all);

  [[nodiscard]] std::size_t size() const { return action_.size(); }
  [[nodiscard]] const schedules::Action& action(std::size_t node) const { return action_[node]; }
  [[nodiscard]] int rank(std::size_t node) const { return rank_[node]; }
  [[nodiscard]] std::int64_t duration_ns(std::size_t node) const { return duration_[node]; }
  // Nodes of rank r: [rank_begin(r), rank_end(r)).
  [[nodiscard]] int rank_begin(int r) const { return r == 0 ? 0 : rank_end_[static_cast<std::size_t>(r) - 1]; }
  [[nodiscard]] int rank_end(int r) const { return rank_end_[static_cast<std::size_t>(r)]; }
  // How many inputs each node waits for; the engine counts them down.
  [[nodiscard]] BigVector<int> take_inputs() { return std::move(inputs_); }
  // Edges between nodes on different ranks: the messages (whichever Edges).
  [[nodiscard]] std::size_t num_messages() const { return num_messages_; }
  // The send wait (WAIT_SEND_F/B) on the producer's rank that waits for the
  // message to `consumer`, or -1. (The per-node tables below stay empty for a
  // schedule without send waits or concurrent pairs, so that the engine's hot
  // path touches no memory for them.)
  [[nodiscard]] bool has_send_waits() const { return !waiter_.empty(); }
  [[nodiscard]] int send_waiter(std::size_t consumer) const {
    return waiter_.empty() ? -1 : waiter_[consumer];
  }
  [[nodiscard]] bool has_pairs() const { return !pair_second_.empty(); }
  // Whether `node` and the next node are an overlapped pair that runs
  // concurrently (only with an overlap share); the next node is the backward.
  [[nodiscard]] bool starts_pair(std::size_t node) const {
    return !pair_second_.empty() && node + 1 < pair_second_.size() && pair_second_[node + 1] != 0;
  }
  [[nodiscard]] bool ends_pair(std::size_t node) const { return !pair_second_.empty() && pair_second_[node] != 0; }
  // Whether (s, m) is recomputed, so its F keeps only the stashed input.
  [[nodiscard]] bool recomputed(const schedules::Action& a) const {
    return ids_[slot(a.stage, compute_slot(schedules::ActionKind::R), a.microbatch)] >= 0;
  }

  // Whether the edge from `producer` to `consumer` is a stage's own
  // data-parallel reduction (REDUCE_GRAD(s) to WAIT_REDUCE_GRAD(s)), which
  // takes time on the rank's reduce stream though both are on one rank.
  [[nodiscard]] static bool reduction_on_own_rank(const schedules::Action& producer,
                                                  const schedules::Action& consumer) {
    return producer.kind == schedules::ActionKind::REDUCE_GRAD && producer.stage == consumer.stage;
  }
  // (The replays ask at every delivery on one rank: without data
  // parallelism the answer is no, and costs no look at the actions.)
  [[nodiscard]] bool reduction_on_own_rank(int producer, int consumer) const {
    return own_reductions_ && reduction_on_own_rank(action_[static_cast<std::size_t>(producer)],
                                                    action_[static_cast<std::size_t>(consumer)]);
  }

  // Calls f(consumer) for each node that needs `node`, in node order.
  template <class F>
  void for_each_consumer(int node, const F& f) const {
    const auto i = static_cast<std::size_t>(node);
    const int count = out_count_[i];
    const int* out = &out_[i * inline_edges_];
    for (int k = 0; k < std::min(count, static_cast<int>(inline_edges_)); ++k) f(out[k]);
    if (count > static_cast<int>(inline_edges_)) for_each_overflow(node, f);
  }

 private:
  static constexpr int kComputeSlots = 6;  // F B I W R STEP

  // The place of (stage, micro-batch, kind) in ids_; kind_slot: F B I W R STEP = 0..5.
  [[nodiscard]] std::size_t slot(schedules::Stage stage, int kind_slot, schedules::Microbatch mb) const {
    return ((stage.at() * static_cast<std::size_t>(num_microbatches_) + mb.at()) * kComputeSlots) +
           static_cast<std::size_t>(kind_slot);
  }
  [[nodiscard]] static constexpr int compute_slot(schedules::ActionKind k) {
    using K = schedules::ActionKind;
    switch (k) {
      case K::F: return 0;
      case K::B: return 1;
      case K::I: return 2;
      case K::W: return 3;
      case K::R: return 4;
      case K::STEP: return 5;
      default: return -1;
    }
  }
  [[nodiscard]] int id_of(const schedules::Action& a) const {
    return ids_[slot(a.stage, compute_slot(a.kind), a.microbatch)];
  }
  // A reducing stage's REDUCE_GRAD / WAIT_REDUCE_GRAD (schedules/gradient_reduction.hpp).
  [[nodiscard]] static std::size_t exchange_slot(const schedules::Action& a) {
    return a.stage.at() * 2 + (a.kind == schedules::ActionKind::WAIT_REDUCE_GRAD ? 1 : 0);
  }
  // Returns the send waits' nodes.
  std::vector<std::size_t> add_nodes(const schedules::Schedule& s, const CostModel& costs);
  void add_edges(const schedules::Schedule& s, Edges edges);
  void add_send_waiters(const schedules::Schedule& s, const std::vector<std::size_t>& send_waits);
  void make_pairs_concurrent(const schedules::Schedule& s, double share);
  template <class F>
  void for_each_overflow(int node, const F& f) const {
    auto it = std::lower_bound(overflow_.begin(), overflow_.end(), std::pair{node, 0});
    for (; it != overflow_.end() && it->first == node; ++it) f(it->second);
  }

  int num_microbatches_ = 0;
  std::size_t inline_edges_ = kInlineEdges;
  BigVector<int> ids_;  // node of each (stage, microbatch, kind), or -1
  std::vector<int> exchange_ids_;  // with gradient reductions: node of each exchange_slot, or -1
  bool own_reductions_ = false;    // data parallelism: each stage reduces on its own rank's stream
  BigVector<schedules::Action> action_;
  BigVector<int> rank_;
  BigVector<std::int64_t> duration_;
  BigVector<int> inputs_;
  BigVector<std::uint8_t> out_count_;
  BigVector<int> out_;  // inline_edges_ consumers per node, in node order
  std::vector<std::pair<int, int>> overflow_;  // (producer, consumer) beyond those, sorted
  BigVector<int> waiter_;                // per node: the send wait for the message to it, or -1; or empty
  BigVector<std::uint8_t> pair_second_;  // per node: 1 for the backward of a concurrent pair; or empty
  std::vector<int> rank_end_;  // one past each rank's last node
  std::size_t num_messages_ = 0;
};

}  // namespace gpipe::sim
