#include "timelines/timeline.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::timelines {
namespace {

constexpr std::array<std::string_view, kNumStreams + 2> kStreamNames = {"compute", "send", "recv", "overlap",
                                                                       "reduce"};

std::string describe(const TimedAction& a) {
  return fmt::format("{} [{}, {}) ns", to_string(a.action), a.start_ns, a.end_ns);
}

bool by_start(const TimedAction& a, const TimedAction& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.stream != b.stream) return a.stream < b.stream;
  return a.end_ns < b.end_ns;
}

}  // namespace

std::string_view to_string(Stream stream) { return kStreamNames[static_cast<std::size_t>(stream)]; }

std::string_view to_string(CollectiveGroup group) {
  return group == CollectiveGroup::context ? "context-parallel" : "tensor-parallel";
}

std::optional<CollectiveGroup> parse_collective_group(std::string_view text) {
  for (const CollectiveGroup group : {CollectiveGroup::tensor, CollectiveGroup::context}) {
    if (text == to_string(group)) return group;
  }
  return std::nullopt;
}

bool is_timeline_source(std::string_view source) {
  return source == "sim" || source == "cpu" || source == "cuda" || source == "torch";
}

TimelineInfo info_of(const schedules::Schedule& schedule) {
  TimelineInfo info;
  info.schedule_name = schedule.name;
  info.num_ranks = schedule.num_ranks;
  info.num_stages = schedule.num_stages;
  info.num_microbatches = schedule.num_microbatches;
  info.recompute = schedule.recompute;
  info.stage_to_rank = schedule.stage_to_rank;
  info.source = "sim";
  return info;
}

std::vector<TimedAction> actions_of(const Timeline& timeline, schedules::Rank rank) {
  std::vector<TimedAction> result;
  std::copy_if(timeline.actions.begin(), timeline.actions.end(), std::back_inserter(result),
               [&](const TimedAction& a) { return a.rank == rank; });
  std::stable_sort(result.begin(), result.end(), by_start);
  return result;
}

std::int64_t makespan_ns(const Timeline& timeline) {
  if (timeline.actions.empty()) return 0;
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (const auto& a : timeline.actions) {
    first = std::min(first, a.start_ns);
    last = std::max(last, a.end_ns);
  }
  return last - first;
}

void check_no_overlap(const Timeline& timeline, std::string_view origin) {
  // Sorted by (rank, stream, start), an overlap shows between neighbours: until
  // the first one, each action ends no later than the next one starts. Only the
  // compute and overlap streams are checked: transfers on different links of a
  // rank may overlap (the trace writer puts them on lanes of their own).
  const auto& acts = timeline.actions;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < acts.size(); ++i) {
    if (acts[i].stream == Stream::compute || acts[i].stream == Stream::overlap) order.push_back(i);
  }
  auto lane = [&](std::size_t i) { return std::pair{acts[i].rank, acts[i].stream}; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    if (lane(i) != lane(j)) return lane(i) < lane(j);
    if (acts[i].start_ns != acts[j].start_ns) return acts[i].start_ns < acts[j].start_ns;
    return acts[i].end_ns < acts[j].end_ns;  // an empty action (a STEP of 0 ns) first
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto& before = acts[order[k - 1]];
    const auto& a = acts[order[k]];
    if (lane(order[k - 1]) == lane(order[k]) && a.start_ns < before.end_ns) {
      throw InputError(fmt::format("{}: actions {} and {} overlap on rank {}, {} stream", origin,
                                   describe(before), describe(a), a.rank.value,
                                   to_string(a.stream)));
    }
  }
}

}  // namespace gpipe::timelines
