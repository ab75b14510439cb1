#include "sim/fifo_replay.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace gpipe::sim {
namespace {

class FifoReplay {
 public:
  FifoReplay(Replay& replay, const StageLinks& links)
      : replay_(replay), links_(links), link_free_(links.size(), 0) {}

  void run() {
    const ActionGraph& graph = replay_.graph();
    const int num_ranks = replay_.num_ranks();
    runnable_.reserve(static_cast<std::size_t>(num_ranks) * 2);
    for (int r = num_ranks - 1; r >= 0; --r) runnable_.push_back(r);
    const auto deliver = [this](int producer, int consumer, std::int64_t now) {
      this->deliver(producer, consumer, now);
    };
    const bool pairs = graph.has_pairs();
    while (!runnable_.empty()) {
      const int rank = runnable_.back();
      runnable_.pop_back();
      const int end = graph.rank_end(rank);
      for (int next = replay_.next(rank); next < end; next = replay_.next(rank)) {
        const auto i = static_cast<std::size_t>(next);
        // One action, or the two of a concurrent pair, ending in time order
        // so that their messages join their links in the order produced.
        // (One call of end() for both: the hot loop stays small enough for
        // the compiler to inline the delivery.)
        std::size_t nodes[2] = {i, i + 1};
        std::int64_t ends[2] = {0, 0};
        int count = 1;
        if (pairs && graph.starts_pair(i)) {
          if (!replay_.pair_can_start(i)) break;
          std::tie(ends[0], ends[1]) = replay_.start_pair(rank, i);
          if (ends[1] < ends[0]) {
            std::swap(nodes[0], nodes[1]);
            std::swap(ends[0], ends[1]);
          }
          count = 2;
        } else {
          if (!replay_.inputs_delivered(i)) break;
          ends[0] = replay_.start(rank, i);
        }
        for (int k = 0; k < count; ++k) replay_.end(rank, nodes[k], ends[k], deliver);
      }
    }
  }

 private:
  // Hands the producer's output to one consumer: at once on the same rank, as
  // a message on the link between their ranks otherwise.
  void deliver(int producer, int consumer, std::int64_t now) {
    const ActionGraph& graph = replay_.graph();
    if (graph.rank(static_cast<std::size_t>(producer)) == graph.rank(static_cast<std::size_t>(consumer)) &&
        !graph.reduction_on_own_rank(producer, consumer)) {
      arrive(consumer, now);
      return;
    }
    const StageLinks::Message m = links_.message(producer, consumer);
    std::int64_t& free = link_free_[static_cast<std::size_t>(m.link)];
    const std::int64_t start = std::max(now, free);
    const std::int64_t end = start + m.transfer_ns;
    free = end;
    replay_.transfer(producer, consumer, start, end);
    arrive(consumer, end);
    // The message is in: the send wait for it, on the producer's rank, may end.
    if (graph.has_send_waits()) {
      if (const int waiter = graph.send_waiter(static_cast<std::size_t>(consumer)); waiter >= 0) arrive(waiter, end);
    }
  }

  // The consumer's rank may go on once its last input is in, if the consumer
  // is what that rank waits at.
  void arrive(int consumer, std::int64_t at) {
    if (!replay_.arrive(consumer, at)) return;
    const int rank = replay_.graph().rank(static_cast<std::size_t>(consumer));
    if (replay_.waits_at(rank, static_cast<std::size_t>(consumer))) runnable_.push_back(rank);
  }

  Replay& replay_;
  const StageLinks& links_;
  std::vector<std::int64_t> link_free_;  // per link: when its last message arrives
  std::vector<int> runnable_;            // ranks that may go on
};

}  // namespace

void replay_fifo_links(Replay& replay, const StageLinks& links) { FifoReplay(replay, links).run(); }

}  // namespace gpipe::sim
