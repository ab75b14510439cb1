#include "exec/runtime/measurement.hpp"

#include "exec/runtime/run_settings.hpp"
#include "timelines/metrics.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::exec {

namespace {

// Measured step `k` of every rank as a Timeline.
timelines::Timeline measured_step(const std::vector<RankPart>& parts, std::size_t k,
                                  const schedules::Schedule& lowered,
                                  const timelines::TimelineInfo& info, MemoryPlacement placement) {
  timelines::Timeline timeline;
  timeline.info = info;
  MeasuredIntervals intervals;
  MeasuredIntervals reductions;
  for (const RankPart& part : parts) {
    for (const auto& [action, interval] : part.steps.at(k).intervals) {
      intervals[{part.rank, action}] = interval;
    }
    for (const auto& [action, interval] : part.steps.at(k).reductions) {
      reductions[{part.rank, action}] = interval;
    }
  }
  timeline.actions = complete_step_actions(lowered, intervals, reductions);
  for (const RankPart& part : parts) {
    const auto& spans = part.steps.at(k).collectives;
    timeline.collectives.insert(timeline.collectives.end(), spans.begin(), spans.end());
  }
  for (const RankPart& part : parts) {
    const auto samples =
        place_memory_changes(part.rank, part.steps.at(k).memory, placement, lowered, timeline.actions);
    timeline.memory.insert(timeline.memory.end(), samples.begin(), samples.end());
  }
  return timeline;
}

}  // namespace

std::vector<RankPart> local_parts(ActionTimer& timer, const std::vector<std::unique_ptr<MemoryLog>>& logs,
                                  const std::vector<schedules::Rank>& local,
                                  const std::vector<std::int64_t>& static_bytes, int measured_steps) {
  std::vector<MeasuredIntervals> intervals;
  std::vector<MeasuredIntervals> reductions;
  std::vector<std::vector<timelines::CollectiveSpan>> collectives;
  for (int k = 0; k < measured_steps; ++k) {
    intervals.push_back(timer.intervals(k));
    reductions.push_back(timer.reductions(k));
    collectives.push_back(timer.collectives(k));
  }
  std::vector<RankPart> parts;
  for (const schedules::Rank rank : local) {
    RankPart& part = parts.emplace_back();
    part.rank = rank;
    part.static_bytes = static_bytes.at(rank.at());
    for (std::size_t k = 0; k < intervals.size(); ++k) {
      RankPart::Step& step = part.steps.emplace_back();
      for (const auto& [key, interval] : intervals[k]) {
        if (key.first == rank) step.intervals.emplace_back(key.second, interval);
      }
      for (const auto& [key, interval] : reductions[k]) {
        if (key.first == rank) step.reductions.emplace_back(key.second, interval);
      }
      for (const timelines::CollectiveSpan& c : collectives[k]) {
        if (c.rank == rank) step.collectives.push_back(c);
      }
      step.memory = logs.at(rank.at())->changes(k);
    }
  }
  return parts;
}

int assemble_timeline(TrainResult& result, const std::vector<RankPart>& parts,
                      const schedules::Schedule& lowered, timelines::TimelineInfo info,
                      MemoryPlacement placement, int steps) {
  info.static_bytes.assign(static_cast<std::size_t>(lowered.num_ranks), 0);
  for (const RankPart& part : parts) info.static_bytes[part.rank.at()] = part.static_bytes;
  const std::size_t measured_steps = parts.empty() ? 0 : parts.front().steps.size();
  std::vector<timelines::Timeline> measured;
  for (std::size_t k = 0; k < measured_steps; ++k) {
    measured.push_back(measured_step(parts, k, lowered, info, placement));
    result.step_times_ns.push_back(timelines::makespan_ns(measured.back()));
  }
  const std::size_t median = median_step(measured);
  result.timeline = std::move(measured[median]);
  result.timeline_step = steps - static_cast<int>(measured_steps) + static_cast<int>(median);
  result.metrics = timelines::compute_metrics(result.timeline);
  return static_cast<int>(median);
}

}  // namespace gpipe::exec
