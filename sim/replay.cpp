#include "sim/replay.hpp"

#include <string>

#include "base/error.hpp"
#include "timelines/metrics.hpp"

namespace gpipe::sim {

using schedules::Action;
using schedules::ActionKind;
using schedules::Rank;

Replay::Replay(const schedules::Schedule& schedule, const CostModel& costs, bool record,
               std::optional<double> overlap_share, ActionGraph::Edges edges)
    : costs_(costs), num_ranks_(schedule.num_ranks), record_(record),
      graph_(schedule, costs, ActionGraph::kInlineEdges, overlap_share, edges),
      pending_(graph_.take_inputs()), ready_(graph_.size(), 0) {
  const auto num_ranks = static_cast<std::size_t>(num_ranks_);
  next_.resize(num_ranks);
  for (int r = 0; r < num_ranks_; ++r) next_[static_cast<std::size_t>(r)] = graph_.rank_begin(r);
  rank_free_.assign(num_ranks, 0);
  memory_.assign(num_ranks, 0);
  peak_memory_.assign(num_ranks, 0);
  busy_.assign(num_ranks, 0);
  if (record_) {
    start_ns_.assign(graph_.size(), 0);
    // Exactly: a send and a receive per message, one per compute action; at
    // most two memory changes per action. Pages never written cost nothing.
    timeline_.actions.reserve(graph_.size() + 2 * graph_.num_messages());
    timeline_.memory.reserve(2 * graph_.size());
  }
}

void Replay::record_transfer(int producer, int consumer, std::int64_t start, std::int64_t end) {
  using timelines::Stream;
  const Action& p = graph_.action(static_cast<std::size_t>(producer));
  const Action& c = graph_.action(static_cast<std::size_t>(consumer));
  // A stage's data-parallel reduction runs on its rank's reduce stream. A
  // tied embedding's gradient has no SEND or RECV of its own: the program's
  // REDUCE_GRAD and WAIT_REDUCE_GRAD frame it, as in a measured timeline.
  if (p.kind == ActionKind::REDUCE_GRAD) {
    if (graph_.reduction_on_own_rank(producer, consumer)) {
      timeline_.actions.push_back({p, Rank{graph_.rank(static_cast<std::size_t>(producer))}, Stream::reduce, start, end});
    }
    return;
  }
  const bool forward = p.kind == ActionKind::F;
  const Action send{p.stage, forward ? ActionKind::SEND_F : ActionKind::SEND_B, p.microbatch};
  const Action recv{c.stage, forward ? ActionKind::RECV_F : ActionKind::RECV_B, c.microbatch};
  timeline_.actions.push_back({send, Rank{graph_.rank(static_cast<std::size_t>(producer))}, Stream::send, start, end});
  timeline_.actions.push_back({recv, Rank{graph_.rank(static_cast<std::size_t>(consumer))}, Stream::recv, start, end});
}

SimResult Replay::finish(const schedules::Schedule& schedule, const SimOptions& options) {
  for (int r = 0; r < num_ranks_; ++r) {
    const int at = next(r);
    if (at < graph_.rank_end(r)) {
      throw stalled(r, graph_.action(static_cast<std::size_t>(at)));
    }
  }
  if (record_) {
    // Compute actions rank after rank, each in program order; the backward of
    // a concurrent pair beside its forward, on the overlap stream.
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const auto stream = graph_.ends_pair(i) ? timelines::Stream::overlap : timelines::Stream::compute;
      timeline_.actions.push_back(
          {graph_.action(i), Rank{graph_.rank(i)}, stream, start_ns_[i], start_ns_[i] + graph_.duration_ns(i)});
    }
  }
  SimResult result;
  result.timeline = std::move(timeline_);
  timelines::TimelineInfo& info = result.timeline.info;
  info = simulated_info(schedule, options);
  // The mean F, I and W times the zero-bubble closed forms read: one pass
  // over the graph's durations, off the replay's hot path.
  timelines::ComputeTimeTotals compute_times;
  for (std::size_t i = 0; i < graph_.size(); ++i) compute_times.add(graph_.action(i).kind, graph_.duration_ns(i));
  result.metrics = timelines::metrics_from_totals(info, makespan_, busy_, peak_memory_, compute_times.means());
  return result;
}

}  // namespace gpipe::sim
