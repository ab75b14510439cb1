#include "sim/engine.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "schedules/error.hpp"
#include "schedules/validate.hpp"
#include "sim/action_graph.hpp"
#include "sim/activation_memory.hpp"
#include "sim/event_queue.hpp"
#include "sim/huge_page_allocator.hpp"
#include "sim/shared_link.hpp"

namespace gpipe::sim {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;
using schedules::Schedule;
using schedules::Stage;

// Replays the compute program (action_graph.hpp). Deliveries are eager: when
// a producer ends, each consumer learns at once when its input arrives
// (`ready_`); an action starts at max(end of the previous action on its
// rank, its latest input's arrival). Memory changes and message prices are
// asked of the models as the action runs rather than stored.
//
// With FIFO links that needs no clock at all: every message on a link comes
// from one rank, in that rank's program order, so its arrival is fixed the
// moment its producer ends, and any order that respects the dependencies
// gives the times of an event-by-event replay to the ns (run_dataflow: each
// rank runs as far as its inputs allow, then waits to be woken). Shared
// links make an arrival depend on later sends, so they replay events in time
// order (run_events): the ends of compute actions, at most one per rank, and
// each link's next change.
class Engine {
 public:
  Engine(const Schedule& schedule, const CostModel& costs, const LinkModel& links, LinkSharing sharing);

  void run(bool record);
  [[nodiscard]] schedules::Metrics metrics(const schedules::TimelineInfo& info) const {
    return schedules::metrics_from_totals(info, makespan_, busy_, peak_memory_);
  }
  schedules::Timeline take_timeline() { return std::move(timeline_); }

 private:
  void add_links(const Schedule& s);
  void run_dataflow();
  void run_events();
  std::int64_t start_action(int rank, std::size_t i);
  void end_action(int rank, std::size_t i, std::int64_t end);
  bool try_start(int rank);
  void finish_action(int rank, std::int64_t now);
  void arrive(int consumer, std::int64_t at);
  void deliver(int producer, int consumer, std::int64_t now);
  void link_event(int link, std::int64_t now);
  void record_transfer(int producer, int consumer, std::int64_t start, std::int64_t end);
  [[nodiscard]] StageMemory stage_memory(const Action& a) const {
    return {costs_.activation_bytes(a.stage, a.microbatch), costs_.stashed_input_bytes(a.stage, a.microbatch)};
  }
  void add_memory(int rank, std::int64_t at, std::int64_t change) {
    if (change == 0) return;
    const auto r = static_cast<std::size_t>(rank);
    memory_[r] += change;
    peak_memory_[r] = std::max(peak_memory_[r], memory_[r]);
    if (record_) timeline_.memory.push_back({Rank{rank}, at, memory_[r]});
  }

  const CostModel& costs_;
  const LinkModel& links_;
  LinkSharing sharing_;
  int num_ranks_;
  ActionGraph graph_;
  BigVector<int> pending_;         // inputs not yet delivered, per node
  BigVector<std::int64_t> ready_;  // latest delivered input; once started, the start

  // Links: the directed link across each stage boundary, both ways.
  std::vector<int> forward_link_, backward_link_;  // per stage boundary, or -1
  std::vector<std::int64_t> link_free_;            // fifo: when the last message arrives
  std::vector<SharedLink> shared_;                 // shared: each link's transfers

  // Ranks.
  std::vector<int> next_;                // the rank's next node to run
  std::vector<char> running_;            // events: the rank's next action has started
  std::vector<int> runnable_;            // dataflow: ranks that may go on
  std::vector<std::int64_t> rank_free_;  // end of the rank's last action
  std::vector<std::int64_t> memory_;
  std::vector<std::int64_t> peak_memory_;
  std::vector<std::int64_t> busy_;  // compute time per rank, ns
  std::int64_t makespan_ = 0;
  bool record_ = true;
  EventQueue queue_;  // sources: ranks, then shared links
  schedules::Timeline timeline_;
};

Engine::Engine(const Schedule& schedule, const CostModel& costs, const LinkModel& links, LinkSharing sharing)
    : costs_(costs), links_(links), sharing_(sharing), num_ranks_(schedule.num_ranks),
      graph_(schedule, costs), pending_(graph_.take_inputs()), ready_(graph_.size(), 0), queue_(0) {
  const auto num_ranks = static_cast<std::size_t>(num_ranks_);
  add_links(schedule);
  next_.resize(num_ranks);
  for (int r = 0; r < num_ranks_; ++r) next_[static_cast<std::size_t>(r)] = graph_.rank_begin(r);
  running_.assign(num_ranks, 0);
  rank_free_.assign(num_ranks, 0);
  memory_.assign(num_ranks, 0);
  peak_memory_.assign(num_ranks, 0);
  busy_.assign(num_ranks, 0);
  queue_ = EventQueue(num_ranks_ + static_cast<int>(shared_.size()));
}

void Engine::add_links(const Schedule& s) {
  std::map<std::pair<int, int>, int> ids;
  std::vector<std::pair<int, int>> ends;  // (from, to) per link
  const auto link_between = [&](int from, int to) {
    auto [it, added] = ids.try_emplace({from, to}, static_cast<int>(ends.size()));
    if (added) ends.emplace_back(from, to);
    return it->second;
  };
  forward_link_.assign(static_cast<std::size_t>(s.num_stages), -1);
  backward_link_.assign(forward_link_.size(), -1);
  for (int st = 0; st + 1 < s.num_stages; ++st) {
    const int a = s.rank_of(Stage{st}).value;
    const int b = s.rank_of(Stage{st + 1}).value;
    if (a == b) continue;
    forward_link_[static_cast<std::size_t>(st)] = link_between(a, b);
    backward_link_[static_cast<std::size_t>(st)] = link_between(b, a);
  }
  link_free_.assign(ends.size(), 0);
  if (sharing_ != LinkSharing::shared) return;
  shared_.reserve(ends.size());
  for (const auto& [from, to] : ends) shared_.emplace_back(links_.transfer_ns(Rank{from}, Rank{to}, 0));
}

// Starts node i on its rank at the earliest moment it may: when the rank's
// previous action has ended and its latest input has arrived. Returns its end.
std::int64_t Engine::start_action(int rank, std::size_t i) {
  const auto r = static_cast<std::size_t>(rank);
  const std::int64_t duration = graph_.duration_ns(i);
  const std::int64_t start = std::max(rank_free_[r], ready_[i]);
  const std::int64_t end = start + duration;
  ready_[i] = start;
  busy_[r] += duration;
  makespan_ = std::max(makespan_, end);
  const Action& a = graph_.action(i);
  if (a.kind == ActionKind::F || a.kind == ActionKind::R) {
    add_memory(rank, start, memory_change_at_start(a.kind, stage_memory(a)));
  }
  return end;
}

// Ends node i at `end`: frees its memory and hands its output on.
void Engine::end_action(int rank, std::size_t i, std::int64_t end) {
  const auto r = static_cast<std::size_t>(rank);
  rank_free_[r] = end;
  ++next_[r];
  const Action& a = graph_.action(i);
  if (a.kind == ActionKind::B || a.kind == ActionKind::W || (a.kind == ActionKind::F && graph_.recomputed(a))) {
    add_memory(rank, end, memory_change_at_end(a.kind, stage_memory(a), true));
  }
  const int id = static_cast<int>(i);
  graph_.for_each_consumer(id, [&](int consumer) { deliver(id, consumer, end); });
}

// Events: starts the rank's next action if the rank is idle and every input
// of the action has been delivered, and schedules its end.
bool Engine::try_start(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (running_[r] || next_[r] == graph_.rank_end(rank)) return false;
  const auto i = static_cast<std::size_t>(next_[r]);
  if (pending_[i] > 0) return false;
  running_[r] = 1;
  queue_.schedule(rank, start_action(rank, i));
  return true;
}

void Engine::finish_action(int rank, std::int64_t now) {
  const auto r = static_cast<std::size_t>(rank);
  running_[r] = 0;
  end_action(rank, static_cast<std::size_t>(next_[r]), now);
  if (!running_[r] && !try_start(rank)) queue_.cancel(rank);
}

void Engine::arrive(int consumer, std::int64_t at) {
  const auto c = static_cast<std::size_t>(consumer);
  ready_[c] = std::max(ready_[c], at);
  if (--pending_[c] > 0) return;
  const int rank = graph_.rank(c);
  if (sharing_ == LinkSharing::shared) {
    try_start(rank);
  } else if (next_[static_cast<std::size_t>(rank)] == consumer) {
    runnable_.push_back(rank);
  }
}

void Engine::record_transfer(int producer, int consumer, std::int64_t start, std::int64_t end) {
  using schedules::Stream;
  const Action& p = graph_.action(static_cast<std::size_t>(producer));
  const Action& c = graph_.action(static_cast<std::size_t>(consumer));
  const bool forward = p.kind == ActionKind::F;
  const Action send{p.stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, p.microbatch};
  const Action recv{c.stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B, c.microbatch};
  timeline_.actions.push_back({send, Rank{graph_.rank(static_cast<std::size_t>(producer))}, Stream::send, start, end});
  timeline_.actions.push_back({recv, Rank{graph_.rank(static_cast<std::size_t>(consumer))}, Stream::recv, start, end});
}

// Hands the producer's output to one consumer: at once on the same rank, as
// a message on the link between their ranks otherwise.
void Engine::deliver(int producer, int consumer, std::int64_t now) {
  const int from = graph_.rank(static_cast<std::size_t>(producer));
  const int to = graph_.rank(static_cast<std::size_t>(consumer));
  if (from == to) {
    arrive(consumer, now);
    return;
  }
  // Cross-rank data flows only between neighbouring stages.
  const Action& dep = graph_.action(static_cast<std::size_t>(producer));
  const bool forward = dep.kind == ActionKind::F;
  const Stage boundary = forward ? dep.stage : graph_.action(static_cast<std::size_t>(consumer)).stage;
  const int link_id = (forward ? forward_link_ : backward_link_)[boundary.at()];
  const auto l = static_cast<std::size_t>(link_id);
  const std::int64_t transfer_ns =
      links_.transfer_ns(Rank{from}, Rank{to}, costs_.boundary_bytes(boundary, dep.microbatch));
  if (sharing_ == LinkSharing::fifo) {
    const std::int64_t start = std::max(now, link_free_[l]);
    const std::int64_t end = start + transfer_ns;
    link_free_[l] = end;
    makespan_ = std::max(makespan_, end);
    if (record_) record_transfer(producer, consumer, start, end);
    arrive(consumer, end);
    return;
  }
  SharedLink& link = shared_[l];
  link.send(now, transfer_ns - link.latency_ns(), SharedLink::Tag{producer, consumer});
  queue_.schedule(num_ranks_ + link_id, link.next_event_ns());
}

void Engine::link_event(int link_id, std::int64_t now) {
  SharedLink& link = shared_[static_cast<std::size_t>(link_id)];
  link.advance(now);
  for (const SharedLink::Completed& done : link.completed()) {
    makespan_ = std::max(makespan_, done.done_ns);
    if (record_) record_transfer(done.tag.producer, done.tag.consumer, done.sent_ns, done.done_ns);
    arrive(done.tag.consumer, done.done_ns);
  }
  link.clear_completed();
  const std::int64_t next = link.next_event_ns();
  if (next == SharedLink::kNever) {
    queue_.cancel(num_ranks_ + link_id);
  } else {
    queue_.schedule(num_ranks_ + link_id, next);
  }
}

// Fifo: a dataflow pass, no clock. Runs each rank as far as its inputs
// allow; a rank that waits is woken when its input is delivered.
void Engine::run_dataflow() {
  runnable_.reserve(static_cast<std::size_t>(num_ranks_) * 2);
  for (int r = num_ranks_ - 1; r >= 0; --r) runnable_.push_back(r);
  while (!runnable_.empty()) {
    const int rank = runnable_.back();
    runnable_.pop_back();
    const auto r = static_cast<std::size_t>(rank);
    const int end = graph_.rank_end(rank);
    while (next_[r] < end) {
      const auto i = static_cast<std::size_t>(next_[r]);
      if (pending_[i] > 0) break;
      end_action(rank, i, start_action(rank, i));
    }
  }
}

// Shared links: events in time order, the ends of compute actions (one per
// rank at most) and each link's next change.
void Engine::run_events() {
  for (int r = 0; r < num_ranks_; ++r) try_start(r);
  while (!queue_.finished()) {
    const EventQueue::Event event = queue_.peek();
    if (event.source < num_ranks_) {
      finish_action(event.source, event.time_ns);
    } else {
      link_event(event.source - num_ranks_, event.time_ns);
    }
  }
}

void Engine::run(bool record) {
  record_ = record;
  if (record_) {
    // Exactly: a send and a receive per message, one per compute action; at
    // most two memory changes per action. Pages never written cost nothing.
    timeline_.actions.reserve(graph_.size() + 2 * graph_.num_messages());
    timeline_.memory.reserve(2 * graph_.size());
  }
  if (sharing_ == LinkSharing::shared) {
    run_events();
  } else {
    run_dataflow();
  }
  for (int r = 0; r < num_ranks_; ++r) {
    const int at = next_[static_cast<std::size_t>(r)];
    if (at < graph_.rank_end(r)) {
      throw RunError("simulation stalled: rank " + std::to_string(r) + " waits at " +
                     schedules::to_string(graph_.action(static_cast<std::size_t>(at))));
    }
  }
  if (!record_) return;
  // Compute actions rank after rank, each in program order.
  for (std::size_t i = 0; i < graph_.size(); ++i) {
    timeline_.actions.push_back({graph_.action(i), Rank{graph_.rank(i)}, schedules::Stream::compute, ready_[i],
                                 ready_[i] + graph_.duration_ns(i)});
  }
}

}  // namespace

SimResult simulate(const Schedule& schedule, const CostModel& costs, const LinkModel& links,
                   const SimOptions& options) {
  if (options.validate) schedules::validate(schedule);
  Engine engine(schedule, costs, links, options.link_sharing);
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
