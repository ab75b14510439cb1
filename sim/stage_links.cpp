#include "sim/stage_links.hpp"

#include <algorithm>
#include <vector>

namespace gpipe::sim {

LinkLayout link_layout(const schedules::Schedule& s) {
  // The directed rank pair across each boundary, forward then backward; a
  // pair gets its link id where it first appears. Sorted rather than looked
  // up in a map: a sweep lays out links for every configuration.
  const int boundaries = std::max(s.num_stages - 1, 0);
  std::vector<std::pair<std::pair<int, int>, int>> crossings;  // ((from, to), 2 * boundary + way)
  crossings.reserve(2 * static_cast<std::size_t>(boundaries));
  for (int st = 0; st < boundaries; ++st) {
    const int a = s.rank_of(schedules::Stage{st}).value;
    const int b = s.rank_of(schedules::Stage{st + 1}).value;
    if (a == b) continue;
    crossings.push_back({{a, b}, 2 * st});
    crossings.push_back({{b, a}, 2 * st + 1});
  }
  std::sort(crossings.begin(), crossings.end());
  // Pairs numbered in order of their first crossing, as they appear.
  std::vector<std::pair<int, std::size_t>> groups;  // (first crossing, where its pair's run starts)
  for (std::size_t i = 0; i < crossings.size(); ++i) {
    if (i == 0 || crossings[i].first != crossings[i - 1].first) groups.emplace_back(crossings[i].second, i);
  }
  std::sort(groups.begin(), groups.end());
  LinkLayout layout;
  layout.forward.assign(static_cast<std::size_t>(s.num_stages), -1);
  layout.backward.assign(layout.forward.size(), -1);
  layout.ends.reserve(groups.size());
  for (const auto& [first, begin] : groups) {
    const int id = static_cast<int>(layout.ends.size());
    const std::pair<int, int> pair = crossings[begin].first;
    layout.ends.push_back(pair);
    for (std::size_t i = begin; i < crossings.size() && crossings[i].first == pair; ++i) {
      const int crossing = crossings[i].second;
      (crossing % 2 == 0 ? layout.forward : layout.backward)[static_cast<std::size_t>(crossing / 2)] = id;
    }
  }
  if (s.tied_embedding && s.num_stages > 1) {
    const int first = s.rank_of(schedules::Stage{0}).value;
    const int last = s.rank_of(schedules::Stage{s.num_stages - 1}).value;
    if (first != last) {
      layout.tied_down = static_cast<int>(layout.ends.size());
      layout.ends.emplace_back(first, last);
      layout.tied_up = static_cast<int>(layout.ends.size());
      layout.ends.emplace_back(last, first);
    }
  }
  if (s.data_parallel > 1) {
    for (int r = 0; r < s.num_ranks; ++r) {
      layout.reduction.push_back(static_cast<int>(layout.ends.size()));
      layout.ends.emplace_back(r, r);
    }
  }
  return layout;
}

StageLinks::StageLinks(const schedules::Schedule& s, const ActionGraph& graph, const CostModel& costs,
                       const LinkModel& links)
    : graph_(graph), costs_(costs), links_(links), layout_(link_layout(s)) {
  last_price_.resize(layout_.ends.size());
}

StageLinks::Message StageLinks::reduction_message(int producer, int consumer) const {
  const schedules::Action& dep = graph_.action(static_cast<std::size_t>(producer));
  if (graph_.reduction_on_own_rank(producer, consumer)) {
    const int rank = graph_.rank(static_cast<std::size_t>(producer));
    return {layout_.reduction[static_cast<std::size_t>(rank)], costs_.gradient_reduction_ns(dep.stage)};
  }
  const int link = dep.stage.value == 0 ? layout_.tied_down : layout_.tied_up;
  const schedules::Rank from{graph_.rank(static_cast<std::size_t>(producer))};
  const schedules::Rank to{graph_.rank(static_cast<std::size_t>(consumer))};
  return {link, links_.transfer_ns(from, to, costs_.tied_gradient_bytes(dep.stage))};
}

std::int64_t StageLinks::latency_ns(int link) const {
  const auto [from, to] = layout_.ends[static_cast<std::size_t>(link)];
  if (from == to) return 0;  // a reduce stream
  return links_.transfer_ns(schedules::Rank{from}, schedules::Rank{to}, 0);
}

}  // namespace gpipe::sim
