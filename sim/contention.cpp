#include "sim/contention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>


namespace gpipe::sim {

double contention_slowdown(std::span<const profiles::ContentionPoint> points, double busy_peers) {
  double x0 = 0, y0 = 0;
  for (const profiles::ContentionPoint& p : points) {
    const auto x1 = static_cast<double>(p.busy_peers);
    if (busy_peers <= x1) return y0 + (p.slowdown - y0) * (busy_peers - x0) / (x1 - x0);
    x0 = x1;
    y0 = p.slowdown;
  }
  return y0;
}

std::unordered_map<std::uint64_t, double> busy_peers(const timelines::Timeline& timeline) {
  using timelines::Stream;
  // Each rank's compute intervals, by start (an overlapped pair's two are
  // one busy stretch of the rank: merged, so that it counts once).
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> busy;
  for (const timelines::TimedAction& t : timeline.actions) {
    if (t.stream != Stream::compute && t.stream != Stream::overlap) continue;
    const auto r = static_cast<std::size_t>(t.rank.value);
    if (busy.size() <= r) busy.resize(r + 1);
    busy[r].emplace_back(t.start_ns, t.end_ns);
  }
  for (auto& intervals : busy) {
    std::ranges::sort(intervals);
    std::vector<std::pair<std::int64_t, std::int64_t>> merged;
    for (const auto& [start, end] : intervals) {
      if (!merged.empty() && start <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, end);
      } else {
        merged.emplace_back(start, end);
      }
    }
    intervals = std::move(merged);
  }
  // How long rank r computes within [start, end): its intervals overlapping it.
  const auto overlap = [&busy](std::size_t r, std::int64_t start, std::int64_t end) {
    const auto& intervals = busy[r];
    auto it = std::ranges::lower_bound(intervals, start, {}, [](const auto& i) { return i.second; });
    std::int64_t total = 0;
    for (; it != intervals.end() && it->first < end; ++it) {
      total += std::min(end, it->second) - std::max(start, it->first);
    }
    return total;
  };
  std::unordered_map<std::uint64_t, double> out;
  for (const timelines::TimedAction& t : timeline.actions) {
    if (t.stream != Stream::compute && t.stream != Stream::overlap) continue;
    const std::int64_t duration = t.duration_ns();
    std::int64_t peers_ns = 0;
    if (duration > 0) {
      for (std::size_t r = 0; r < busy.size(); ++r) {
        if (r != static_cast<std::size_t>(t.rank.value)) peers_ns += overlap(r, t.start_ns, t.end_ns);
      }
    }
    out[action_key(t.action)] = duration > 0 ? static_cast<double>(peers_ns) / static_cast<double>(duration) : 0.0;
  }
  return out;
}

std::int64_t ContendedCosts::duration_ns(const schedules::Action& action) const {
  const std::int64_t base = this->base().duration_ns(action);
  const auto it = factors_.find(action_key(action));
  if (it == factors_.end()) return base;
  return std::llround(static_cast<double>(base) * it->second);
}

SimResult simulate_with_contention(const schedules::Schedule& schedule, const CostModel& costs,
                                   const LinkModel& links, const SimOptions& options,
                                   std::span<const profiles::ContentionPoint> points, int replays, int replicas) {
  if (points.empty() || (schedule.num_ranks < 2 && replicas < 2) || replays < 2) {
    return simulate(schedule, costs, links, options);
  }
  SimOptions recorded = options;
  recorded.record_timeline = true;
  SimResult result = simulate(schedule, costs, links, recorded);
  recorded.validate = false;  // the same schedule: checked once
  for (int replay = 1; replay < replays; ++replay) {
    std::unordered_map<std::uint64_t, double> factors = busy_peers(result.timeline);
    for (auto& [key, peers] : factors) peers = 1 + contention_slowdown(points, replicas * peers + replicas - 1);
    const ContendedCosts contended(costs, std::move(factors));
    result = simulate(schedule, contended, links, recorded);
  }
  if (!options.record_timeline) {
    result.timeline.actions.clear();
    result.timeline.memory.clear();
  }
  return result;
}

}  // namespace gpipe::sim
