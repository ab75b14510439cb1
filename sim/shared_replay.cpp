#include "sim/shared_replay.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/shared_link.hpp"

namespace gpipe::sim {
namespace {

// Event sources: rank r is source r, link l is source num_ranks + l.
class SharedReplay {
 public:
  SharedReplay(Replay& replay, const StageLinks& links)
      : replay_(replay), links_(links), num_ranks_(replay.num_ranks()),
        running_(static_cast<std::size_t>(num_ranks_)),
        queue_(num_ranks_ + static_cast<int>(links.size())) {
    shared_.reserve(links.size());
    for (int l = 0; l < static_cast<int>(links.size()); ++l) shared_.emplace_back(links.latency_ns(l));
  }

  void run() {
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

 private:
  // Starts the rank's next action (or concurrent pair) if the rank is idle and
  // every input of it has been delivered, and schedules its end.
  bool try_start(int rank) {
    auto& running = running_[static_cast<std::size_t>(rank)];
    const int next = replay_.next(rank);
    if (!running.empty() || next == replay_.graph().rank_end(rank)) return false;
    const auto i = static_cast<std::size_t>(next);
    if (!replay_.can_start(i)) return false;
    if (replay_.graph().starts_pair(i)) {
      const auto [first, second] = replay_.start_pair(rank, i);
      // The later end first: the earlier one is taken from the back.
      running.push({second < first ? i : i + 1, std::max(first, second)});
      running.push({second < first ? i + 1 : i, std::min(first, second)});
    } else {
      running.push({i, replay_.start(rank, i)});
    }
    queue_.schedule(rank, running.back().end_ns);
    return true;
  }

  void finish_action(int rank, std::int64_t now) {
    auto& running = running_[static_cast<std::size_t>(rank)];
    const std::size_t node = running.back().node;
    running.pop();
    if (!running.empty()) queue_.schedule(rank, running.back().end_ns);  // the pair's other half
    replay_.end(rank, node, now,
                [this](int producer, int consumer, std::int64_t at) { deliver(producer, consumer, at); });
    // Delivering may already have started the rank's next action.
    if (running.empty() && !try_start(rank)) queue_.cancel(rank);
  }

  // At once on the same rank; otherwise a transfer joins the link between the ranks.
  void deliver(int producer, int consumer, std::int64_t now) {
    const ActionGraph& graph = replay_.graph();
    if (graph.rank(static_cast<std::size_t>(producer)) == graph.rank(static_cast<std::size_t>(consumer)) &&
        !graph.reduction_on_own_rank(producer, consumer)) {
      arrive(consumer, now);
      return;
    }
    const StageLinks::Message m = links_.message(producer, consumer);
    SharedLink& link = shared_[static_cast<std::size_t>(m.link)];
    link.send(now, m.transfer_ns - link.latency_ns(), SharedLink::Tag{producer, consumer});
    queue_.schedule(num_ranks_ + m.link, link.next_event_ns());
  }

  void arrive(int consumer, std::int64_t at) {
    if (replay_.arrive(consumer, at)) try_start(replay_.graph().rank(static_cast<std::size_t>(consumer)));
  }

  void link_event(int link_id, std::int64_t now) {
    SharedLink& link = shared_[static_cast<std::size_t>(link_id)];
    link.advance(now);
    for (const SharedLink::Completed& done : link.completed()) {
      replay_.transfer(done.tag.producer, done.tag.consumer, done.sent_ns, done.done_ns);
      arrive(done.tag.consumer, done.done_ns);
      // The message is in: the send wait for it, on the producer's rank, may end.
      const int waiter = replay_.graph().send_waiter(static_cast<std::size_t>(done.tag.consumer));
      if (waiter >= 0) arrive(waiter, done.done_ns);
    }
    link.clear_completed();
    const std::int64_t next = link.next_event_ns();
    if (next == SharedLink::kNever) {
      queue_.cancel(num_ranks_ + link_id);
    } else {
      queue_.schedule(num_ranks_ + link_id, next);
    }
  }

  Replay& replay_;
  const StageLinks& links_;
  int num_ranks_;
  // What a rank runs: one action, or both of a concurrent pair, the one that
  // ends first at the back.
  struct Running {
    std::size_t node;
    std::int64_t end_ns;
  };
  class RunningStack {
   public:
    [[nodiscard]] bool empty() const { return size_ == 0; }
    [[nodiscard]] const Running& back() const { return slots_[size_ - 1]; }
    void push(Running r) { slots_[size_++] = r; }
    void pop() { --size_; }

   private:
    std::array<Running, 2> slots_{};
    int size_ = 0;
  };
  std::vector<RunningStack> running_;  // per rank
  std::vector<SharedLink> shared_;  // per link: the transfers on it
  EventQueue queue_;
};

}  // namespace

void replay_shared_links(Replay& replay, const StageLinks& links) { SharedReplay(replay, links).run(); }

}  // namespace gpipe::sim
