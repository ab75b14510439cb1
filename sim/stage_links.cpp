#include "sim/stage_links.hpp"

#include <map>

namespace gpipe::sim {

StageLinks::StageLinks(const schedules::Schedule& s, const ActionGraph& graph, const CostModel& costs,
                       const LinkModel& links)
    : graph_(graph), costs_(costs), links_(links) {
  std::map<std::pair<int, int>, int> ids;
  const auto link_between = [&](int from, int to) {
    auto [it, added] = ids.try_emplace({from, to}, static_cast<int>(ends_.size()));
    if (added) ends_.emplace_back(from, to);
    return it->second;
  };
  forward_.assign(static_cast<std::size_t>(s.num_stages), -1);
  backward_.assign(forward_.size(), -1);
  for (int st = 0; st + 1 < s.num_stages; ++st) {
    const int a = s.rank_of(schedules::Stage{st}).value;
    const int b = s.rank_of(schedules::Stage{st + 1}).value;
    if (a == b) continue;
    forward_[static_cast<std::size_t>(st)] = link_between(a, b);
    backward_[static_cast<std::size_t>(st)] = link_between(b, a);
  }
  last_price_.resize(ends_.size());
}

std::int64_t StageLinks::latency_ns(int link) const {
  const auto [from, to] = ends_[static_cast<std::size_t>(link)];
  return links_.transfer_ns(schedules::Rank{from}, schedules::Rank{to}, 0);
}

}  // namespace gpipe::sim
