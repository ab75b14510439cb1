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
  bool recomputed = false;  // for F: an R of the same (s,m) follows
  std::int64_t duration = 0;
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
  void run(bool record_comm);
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
  std::vector<char> busy_;
  std::vector<std::int64_t> memory_;
  std::vector<StageMemory> stage_memory_;
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
      nodes_.push_back(Node{a, r, 0, false, costs_.duration_ns(a), -1, -1});
    }
  }
  const auto contains = [this](const Action& a) {
    return compute_slot(a.kind) >= 0 && id_of(a) >= 0;
  };

  // Per stage boundary, the link and transfer time in each direction: the
  // bytes are the same for every micro-batch, so price them once.
  std::vector<std::int64_t> forward_ns(static_cast<std::size_t>(s_.num_stages), 0);
  std::vector<int> forward_link(forward_ns.size(), -1);
  std::vector<std::int64_t> backward_ns(forward_ns.size(), 0);
  std::vector<int> backward_link(forward_ns.size(), -1);
  for (int st = 0; st + 1 < s_.num_stages; ++st) {
    const int a = s_.rank_of(Stage{st}).value;
    const int b = s_.rank_of(Stage{st + 1}).value;
    if (a == b) continue;
    const std::int64_t bytes = costs_.boundary_bytes(Stage{st});
    const auto i = static_cast<std::size_t>(st);
    forward_link[i] = link_between(a, b);
    forward_ns[i] = links_.transfer_ns(Rank{a}, Rank{b}, bytes);
    backward_link[i] = link_between(b, a);
    backward_ns[i] = links_.transfer_ns(Rank{b}, Rank{a}, bytes);
  }

  // Two passes over the dependencies: count each producer's edges, then fill them.
  edge_begin_.assign(nodes_.size() + 1, 0);
  for (Node& n : nodes_) {
    schedules::for_each_dependency(s_, false, n.action, contains, [&](const Action& dep) {
      ++edge_begin_[static_cast<std::size_t>(id_of(dep)) + 1];
      ++n.pending;
    });
    if (n.action.kind == ActionKind::R) nodes_[static_cast<std::size_t>(id_of({n.action.stage, ActionKind::F, n.action.microbatch}))].recomputed = true;
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
        const auto boundary = static_cast<std::size_t>(forward ? dep.stage.value : consumer.action.stage.value);
        e.link = forward ? forward_link[boundary] : backward_link[boundary];
        e.transfer_ns = forward ? forward_ns[boundary] : backward_ns[boundary];
      }
      edges_[static_cast<std::size_t>(fill[static_cast<std::size_t>(p)]++)] = e;
    });
  }

  stage_memory_.resize(static_cast<std::size_t>(s_.num_stages));
  for (int st = 0; st < s_.num_stages; ++st) {
    stage_memory_[static_cast<std::size_t>(st)] = {costs_.activation_bytes(Stage{st}),
                                                   costs_.stashed_input_bytes(Stage{st})};
  }
  next_.assign(num_ranks, 0);
  busy_.assign(num_ranks, 0);
  memory_.assign(num_ranks, 0);
}

void Engine::add_memory(int rank, std::int64_t now, std::int64_t change) {
  if (change == 0) return;
  auto& bytes = memory_[static_cast<std::size_t>(rank)];
  bytes += change;
  timeline_.memory.push_back({Rank{rank}, now, bytes});
}

void Engine::try_start(int rank, std::int64_t now) {
  const auto r = static_cast<std::size_t>(rank);
  if (busy_[r] || next_[r] == programs_[r].size()) return;
  const int id = programs_[r][next_[r]];
  Node& n = nodes_[static_cast<std::size_t>(id)];
  if (n.pending > 0) return;
  busy_[r] = 1;
  n.start = now;
  n.end = now + n.duration;
  add_memory(rank, now, memory_change_at_start(n.action.kind, stage_memory_[n.action.stage.at()]));
  queue_.schedule(n.end, Payload{EventKind::action_end, id});
}

void Engine::run(bool record_comm) {
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
    busy_[r] = 0;
    ++next_[r];
    add_memory(n.rank, now,
               memory_change_at_end(n.action.kind, stage_memory_[n.action.stage.at()], n.recomputed));
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
      if (record_comm) {
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
  for (const Node& n : nodes_) {
    timeline_.actions.push_back({n.action, Rank{n.rank}, Stream::compute, n.start, n.end});
  }
}

Schedule compute_program(const Schedule& schedule) {
  Schedule compute = schedules::lower(schedule);
  for (auto& list : compute.ranks) {
    std::erase_if(list, [](const Action& a) { return schedules::is_comm(a.kind); });
  }
  return compute;
}

}  // namespace

schedules::Timeline simulate(const Schedule& schedule, const CostModel& costs,
                             const LinkModel& links, const SimOptions& options) {
  schedules::validate(schedule);
  const Schedule compute = compute_program(schedule);
  Engine engine(compute, costs, links);
  engine.build();
  engine.run(options.record_comm);
  schedules::Timeline timeline = engine.take_timeline();
  timeline.info = schedules::info_of(schedule);
  timeline.info.source = "sim";
  timeline.info.batch_size = options.batch_size;
  timeline.info.static_bytes = options.static_bytes;
  return timeline;
}

}  // namespace gpipe::sim
