#include "exec/runtime/step_timeline.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec {

using schedules::Action;
using schedules::ActionKind;

namespace {

// The RECV that receives what `send` sends, and the rank it runs on.
std::pair<schedules::Rank, Action> matching_recv(const schedules::Schedule& lowered, const Action& send) {
  const bool forward = send.kind == ActionKind::SEND_F;
  const schedules::Stage to{send.stage.value + (forward ? 1 : -1)};
  const Action recv{to, forward ? ActionKind::RECV_F : ActionKind::RECV_B, send.microbatch};
  return {lowered.rank_of(to), recv};
}

std::vector<timelines::MemorySample> at_action_bounds(
    schedules::Rank rank, const std::vector<MemoryChange>& changes,
    const schedules::Schedule& lowered, const std::vector<timelines::TimedAction>& actions) {
  // This rank's actions in program order: complete_step_actions emits them so.
  std::vector<const timelines::TimedAction*> program;
  for (const auto& t : actions) {
    if (t.rank == rank && t.stream != timelines::Stream::reduce) program.push_back(&t);
  }
  if (program.size() != lowered.actions(rank).size()) {
    throw std::logic_error(fmt::format("rank {}: the timeline does not hold its program", rank.value));
  }
  std::vector<timelines::MemorySample> out;
  std::int64_t bytes = 0;
  std::int64_t previous_end = 0;
  int last_index = -1;
  for (const MemoryChange& c : changes) {
    std::int64_t time = previous_end;
    if (c.action_index >= 0) {
      const auto& t = *program.at(static_cast<std::size_t>(c.action_index));
      time = c.bytes > bytes ? t.start_ns : t.end_ns;
      last_index = c.action_index;
    } else if (last_index >= 0) {
      time = program[static_cast<std::size_t>(last_index)]->end_ns;
    }
    previous_end = time;
    bytes = c.bytes;
    out.push_back({rank, time, c.bytes});
  }
  // Placed by rule, the changes of one action may come out of time order: the
  // counter track wants them sorted (stable, so equal times keep their order).
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  return out;
}

}  // namespace

std::vector<timelines::TimedAction> complete_step_actions(const schedules::Schedule& lowered,
                                                          const MeasuredIntervals& measured,
                                                          const MeasuredIntervals& reductions) {
  std::vector<timelines::TimedAction> out;
  for (int r = 0; r < lowered.num_ranks; ++r) {
    const schedules::Rank rank{r};
    std::int64_t stream_end[timelines::kNumStreams] = {0, 0, 0};
    for (const Action& a : lowered.actions(rank)) {
      const timelines::Stream stream = timelines::stream_of(a.kind);
      auto found = measured.find({rank, a});
      if (found == measured.end() && (a.kind == ActionKind::SEND_F || a.kind == ActionKind::SEND_B)) {
        found = measured.find(matching_recv(lowered, a));
        if (found == measured.end()) {
          throw RunError(fmt::format("rank {}: {} has no measured copy to take its time from", r,
                                     to_string(a)));
        }
      }
      if (found == measured.end() && (a.kind == ActionKind::RECV_F || a.kind == ActionKind::RECV_B)) {
        throw RunError(fmt::format("rank {}: the copy of {} was not measured", r, to_string(a)));
      }
      auto& last = stream_end[static_cast<int>(stream)];
      const Interval interval = found != measured.end() ? found->second : Interval{last, last};
      last = std::max(last, interval.end_ns);
      out.push_back({a, rank, stream, interval.start_ns, interval.end_ns});
    }
  }
  for (const auto& [key, interval] : reductions) {
    out.push_back({key.second, key.first, timelines::Stream::reduce, interval.start_ns, interval.end_ns});
  }
  return out;
}

std::vector<timelines::MemorySample> place_memory_changes(
    schedules::Rank rank, const std::vector<MemoryChange>& changes, MemoryPlacement placement,
    const schedules::Schedule& lowered, const std::vector<timelines::TimedAction>& actions) {
  if (placement == MemoryPlacement::action_bounds) {
    return at_action_bounds(rank, changes, lowered, actions);
  }
  std::vector<timelines::MemorySample> out;
  out.reserve(changes.size());
  for (const MemoryChange& c : changes) out.push_back({rank, c.host_ns, c.bytes});
  return out;
}

}  // namespace gpipe::exec
