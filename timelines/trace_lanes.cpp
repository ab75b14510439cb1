#include "timelines/trace_lanes.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include <fmt/format.h>

namespace gpipe::timelines {

std::vector<int> assign_lanes(const Timeline& timeline) {
  const auto& acts = timeline.actions;
  std::vector<int> tids(acts.size(), 0);
  std::vector<std::size_t> order(acts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    return acts[i].start_ns < acts[j].start_ns;
  });
  // For each (rank, comm stream): when each of its lanes comes free.
  std::map<std::pair<int, Stream>, std::vector<std::int64_t>> lanes_free_at;
  for (const std::size_t i : order) {
    const TimedAction& a = acts[i];
    if (a.stream == Stream::compute) continue;
    if (a.stream == Stream::overlap) {
      tids[i] = kOverlapTid;  // one lane: a rank runs one pair at a time
      continue;
    }
    if (a.stream == Stream::reduce) {
      tids[i] = kReduceTid;  // one lane: a rank's reductions run one after another
      continue;
    }
    auto& free_at = lanes_free_at[{a.rank.value, a.stream}];
    auto lane = std::find_if(free_at.begin(), free_at.end(),
                             [&](std::int64_t t) { return t <= a.start_ns; });
    if (lane == free_at.end()) lane = free_at.insert(free_at.end(), a.start_ns);
    *lane = a.end_ns;
    tids[i] = static_cast<int>(a.stream) + 2 * static_cast<int>(lane - free_at.begin());
  }
  return tids;
}

std::vector<int> assign_collective_lanes(const Timeline& timeline) {
  const auto& spans = timeline.collectives;
  std::vector<int> lanes(spans.size(), kTensorParallelTid);
  std::vector<std::size_t> order(spans.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return spans[i].start_ns < spans[j].start_ns; });
  // By rank and group: when each of its lanes comes free.
  std::map<std::pair<int, CollectiveGroup>, std::vector<std::int64_t>> free_at;
  for (const std::size_t i : order) {
    auto& lanes_free = free_at[{spans[i].rank.value, spans[i].group}];
    auto lane = std::find_if(lanes_free.begin(), lanes_free.end(),
                             [&](std::int64_t t) { return t <= spans[i].start_ns; });
    if (lane == lanes_free.end()) lane = lanes_free.insert(lanes_free.end(), spans[i].start_ns);
    *lane = spans[i].end_ns;
    const int first = spans[i].group == CollectiveGroup::context ? kContextParallelTid : kTensorParallelTid;
    lanes[i] = first + static_cast<int>(lane - lanes_free.begin());
  }
  return lanes;
}

Stream stream_of_lane(int lane) {
  if (lane == 0) return Stream::compute;
  if (lane == kOverlapTid) return Stream::overlap;
  if (lane == kReduceTid) return Stream::reduce;
  return lane % 2 == 1 ? Stream::send : Stream::recv;
}

std::string lane_name(int lane) {
  for (const auto& [first, group] : {std::pair{kContextParallelTid, CollectiveGroup::context},
                                    std::pair{kTensorParallelTid, CollectiveGroup::tensor}}) {
    if (lane == first) return std::string(to_string(group));
    if (lane > first) return fmt::format("{} {}", to_string(group), lane - first + 1);
  }
  std::string name(to_string(stream_of_lane(lane)));
  if (lane > 2 && lane != kOverlapTid && lane != kReduceTid) name += " " + std::to_string((lane + 1) / 2);
  return name;
}

}  // namespace gpipe::timelines
