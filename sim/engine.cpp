#include "sim/engine.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "schedules/dependencies.hpp"
#include "schedules/error.hpp"
#include "schedules/lower.hpp"
#include "schedules/validate.hpp"
#include "sim/activation_memory.hpp"
#include "sim/event_queue.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;
using schedules::Schedule;
using schedules::Stage;

// Compute kinds get a dense slot each: F B I W R STEP.
constexpr int kComputeSlots = 6;
int compute_slot(ActionKind k) {
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

struct Node {
  Action action;
  int rank = 0;
  int pending = 0;  // inputs not yet ready
  std::int64_t duration = 0;
  std::int64_t memory_at_start = 0;  // activation bytes the action adds as it starts
  std::int64_t memory_at_end = 0;    // and as it ends (negative: frees)
  std::int64_t start = -1;
  std::int64_t end = -1;
};

// A data edge from a producer to a consumer; link < 0 when both share a rank.
struct Edge {
  int consumer = 0;
  int link = -1;
  std::int64_t transfer_ns = 0;
};

enum class EventKind : std::uint8_t { action_end, message_arrival };
struct Payload {
  EventKind kind;
  int node;
};

class Engine {
 public:
  Engine(const Schedule& compute, const CostModel& costs, const LinkModel& links)
      : s_(compute), costs_(costs), links_(links) {}

  void build();
  void run(bool record);
  // The metrics from the engine's running totals; the timeline as recorded.
  [[nodiscard]] schedules::Metrics metrics(const schedules::TimelineInfo& info) const;
  schedules::Timeline take_timeline() { return std::move(timeline_); }

 private:
  [[nodiscard]] std::size_t slot(const Action& a) const {
    return (a.stage.at() * kComputeSlots + static_cast<std::size_t>(compute_slot(a.kind))) *
               static_cast<std::size_t>(s_.num_microbatches) +
           a.microbatch.at();
  }
  [[nodiscard]] int id_of(const Action& a) const { return ids_[slot(a)]; }
  int link_between(int from, int to);
  void try_start(int rank, std::int64_t now);
  void add_memory(int rank, std::int64_t now, std::int64_t change);

  const Schedule& s_;
  const CostModel& costs_;
  const LinkModel& links_;
  std::vector<int> ids_;
  std::vector<Node> nodes_;
  std::vector<std::vector<int>> programs_;  // node ids per rank, in order
  std::vector<int> edge_begin_;             // CSR: edges of node i are [edge_begin_[i], edge_begin_[i+1])
  std::vector<Edge> edges_;
  std::map<std::pair<int, int>, int> link_ids_;
  std::vector<std::int64_t> link_free_;
  std::vector<std::size_t> next_;
  std::vector<char> running_;
  std::vector<std::int64_t> memory_;
  std::vector<std::int64_t> peak_memory_;
  std::vector<std::int64_t> busy_;  // compute time per rank, ns
  std::int64_t makespan_ = 0;
  bool record_ = true;
  EventQueue<Payload> queue_;
  schedules::Timeline timeline_;
};

int Engine::link_between(int from, int to) {
  auto [it, added] = link_ids_.try_emplace({from, to}, static_cast<int>(link_ids_.size()));
  if (added) link_free_.push_back(0);
  return it->second;
}

void Engine::build() {
  const auto num_ranks = static_cast<std::size_t>(s_.num_ranks);
  ids_.assign(static_cast<std::size_t>(s_.num_stages) * kComputeSlots *
                  static_cast<std::size_t>(s_.num_microbatches),
              -1);
  programs_.resize(num_ranks);
  for (int r = 0; r < s_.num_ranks; ++r) {
    for (const Action& a : s_.actions(Rank{r})) {
      const int id = static_cast<int>(nodes_.size());
      ids_[slot(a)] = id;
      programs_[static_cast<std::size_t>(r)].push_back(id);
      nodes_.push_back(Node{a, r, 0, costs_.duration_ns(a), 0, 0, -1, -1});
    }
  }
  const auto contains = [this](const Action& a) {
    return compute_slot(a.kind) >= 0 && id_of(a) >= 0;
  };

  // The directed link between the ranks of each stage boundary, both ways.
  std::vector<int> forward_link(static_cast<std::size_t>(s_.num_stages), -1);
  std::vector<int> backward_link(forward_link.size(), -1);
  for (int st = 0; st + 1 < s_.num_stages; ++st) {
    const int a = s_.rank_of(Stage{st}).value;
    const int b = s_.rank_of(Stage{st + 1}).value;
    if (a == b) continue;
    forward_link[static_cast<std::size_t>(st)] = link_between(a, b);
    backward_link[static_cast<std::size_t>(st)] = link_between(b, a);
  }

  // Two passes over the dependencies: count each producer's edges, then fill them.
  edge_begin_.assign(nodes_.size() + 1, 0);
  for (Node& n : nodes_) {
    schedules::for_each_dependency(s_, false, n.action, contains, [&](const Action& dep) {
      ++edge_begin_[static_cast<std::size_t>(id_of(dep)) + 1];
      ++n.pending;
    });
  }
  for (Node& n : nodes_) {
    if (n.action.kind == ActionKind::STEP) continue;
    const StageMemory memory{costs_.activation_bytes(n.action.stage, n.action.microbatch),
                             costs_.stashed_input_bytes(n.action.stage, n.action.microbatch)};
    const bool recomputed = id_of({n.action.stage, ActionKind::R, n.action.microbatch}) >= 0;
    n.memory_at_start = memory_change_at_start(n.action.kind, memory);
    n.memory_at_end = memory_change_at_end(n.action.kind, memory, recomputed);
  }
  for (std::size_t i = 1; i < edge_begin_.size(); ++i) edge_begin_[i] += edge_begin_[i - 1];
  edges_.resize(static_cast<std::size_t>(edge_begin_.back()));
  std::vector<int> fill(edge_begin_.begin(), edge_begin_.end() - 1);
  for (std::size_t c = 0; c < nodes_.size(); ++c) {
    const Node& consumer = nodes_[c];
    schedules::for_each_dependency(s_, false, consumer.action, contains, [&](const Action& dep) {
      const int p = id_of(dep);
      Edge e{static_cast<int>(c), -1, 0};
      if (nodes_[static_cast<std::size_t>(p)].rank != consumer.rank) {
        // Cross-rank data flows only between neighbouring stages.
        const bool forward = dep.kind == ActionKind::F;
        const Stage boundary = forward ? dep.stage : consumer.action.stage;
        e.link = (forward ? forward_link : backward_link)[boundary.at()];
        e.transfer_ns = links_.transfer_ns(Rank{nodes_[static_cast<std::size_t>(p)].rank}, Rank{consumer.rank},
                                           costs_.boundary_bytes(boundary, dep.microbatch));
      }
      edges_[static_cast<std::size_t>(fill[static_cast<std::size_t>(p)]++)] = e;
    });
  }

  next_.assign(num_ranks, 0);
  running_.assign(num_ranks, 0);
  memory_.assign(num_ranks, 0);
  peak_memory_.assign(num_ranks, 0);
  busy_.assign(num_ranks, 0);
}

void Engine::add_memory(int rank, std::int64_t now, std::int64_t change) {
  if (change == 0) return;
  const auto r = static_cast<std::size_t>(rank);
  memory_[r] += change;
  peak_memory_[r] = std::max(peak_memory_[r], memory_[r]);
  if (record_) timeline_.memory.push_back({Rank{rank}, now, memory_[r]});
}

void Engine::try_start(int rank, std::int64_t now) {
  const auto r = static_cast<std::size_t>(rank);
  if (running_[r] || next_[r] == programs_[r].size()) return;
  const int id = programs_[r][next_[r]];
  Node& n = nodes_[static_cast<std::size_t>(id)];
  if (n.pending > 0) return;
  running_[r] = 1;
  n.start = now;
  n.end = now + n.duration;
  busy_[r] += n.duration;
  makespan_ = std::max(makespan_, n.end);
  add_memory(rank, now, n.memory_at_start);
  queue_.schedule(n.end, Payload{EventKind::action_end, id});
}

void Engine::run(bool record) {
  record_ = record;
  using schedules::Stream;
  for (int r = 0; r < s_.num_ranks; ++r) try_start(r, 0);
  while (!queue_.finished()) {
    const auto event = queue_.proceed();
    const std::int64_t now = event.time_ns;
    Node& n = nodes_[static_cast<std::size_t>(event.payload.node)];
    if (event.payload.kind == EventKind::message_arrival) {
      --n.pending;
      try_start(n.rank, now);
      continue;
    }
    const auto r = static_cast<std::size_t>(n.rank);
    running_[r] = 0;
    ++next_[r];
    add_memory(n.rank, now, n.memory_at_end);
    const auto id = static_cast<std::size_t>(event.payload.node);
    for (int i = edge_begin_[id]; i < edge_begin_[id + 1]; ++i) {
      const Edge& e = edges_[static_cast<std::size_t>(i)];
      Node& consumer = nodes_[static_cast<std::size_t>(e.consumer)];
      if (e.link < 0) {
        --consumer.pending;
        continue;
      }
      auto& free_at = link_free_[static_cast<std::size_t>(e.link)];
      const std::int64_t start = std::max(now, free_at);
      free_at = start + e.transfer_ns;
      queue_.schedule(free_at, Payload{EventKind::message_arrival, e.consumer});
      makespan_ = std::max(makespan_, free_at);
      if (record_) {
        const bool forward = n.action.kind == ActionKind::F;
        const Action send{n.action.stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, n.action.microbatch};
        const Action recv{consumer.action.stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B,
                          consumer.action.microbatch};
        timeline_.actions.push_back({send, Rank{n.rank}, Stream::send, start, free_at});
        timeline_.actions.push_back({recv, Rank{consumer.rank}, Stream::recv, start, free_at});
      }
    }
    try_start(n.rank, now);
  }
  for (int r = 0; r < s_.num_ranks; ++r) {
    const auto& program = programs_[static_cast<std::size_t>(r)];
    const auto done = next_[static_cast<std::size_t>(r)];
    if (done < program.size()) {
      throw RunError("simulation stalled: rank " + std::to_string(r) + " waits at " +
                     schedules::to_string(nodes_[static_cast<std::size_t>(program[done])].action));
    }
  }
  if (!record_) return;
  for (const Node& n : nodes_) {
    timeline_.actions.push_back({n.action, Rank{n.rank}, Stream::compute, n.start, n.end});
  }
}

// Every rank's first action with no inputs starts at 0, so the makespan is the
// latest end, as compute_metrics would find it from the recorded timeline.
schedules::Metrics Engine::metrics(const schedules::TimelineInfo& info) const {
  return schedules::metrics_from_totals(info, makespan_, busy_, peak_memory_);
}

Schedule compute_program(const Schedule& schedule) {
  Schedule compute = schedules::lower(schedule);
  for (auto& list : compute.ranks) {
    std::erase_if(list, [](const Action& a) { return schedules::is_comm(a.kind); });
  }
  return compute;
}

}  // namespace

SimResult simulate(const Schedule& schedule, const CostModel& costs, const LinkModel& links,
                   const SimOptions& options) {
  if (options.validate) schedules::validate(schedule);
  const Schedule compute = compute_program(schedule);
  Engine engine(compute, costs, links);
  engine.build();
  engine.run(options.record_timeline);
  SimResult result;
  result.timeline = engine.take_timeline();
  schedules::TimelineInfo& info = result.timeline.info;
  info = schedules::info_of(schedule);
  info.source = "sim";
  info.batch_size = options.batch_size;
  info.static_bytes = options.static_bytes;
  result.metrics = engine.metrics(info);
  return result;
}

}  // namespace gpipe::sim
