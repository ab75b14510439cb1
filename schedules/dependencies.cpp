#include "schedules/dependencies.hpp"

namespace gpipe::schedules {

Dependencies::Dependencies(const Schedule& schedule) : schedule_(schedule), via_comm_(false) {
  index_.reserve(static_cast<std::size_t>(schedule.total_actions()));
  for (int r = 0; r < static_cast<int>(schedule.ranks.size()); ++r) {
    const auto& list = schedule.ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Action& a = list[static_cast<std::size_t>(i)];
      index_.try_emplace(a, Position{Rank{r}, i});
      via_comm_ = via_comm_ || is_comm(a.kind);
    }
  }
}

std::optional<Position> Dependencies::position(const Action& action) const {
  auto it = index_.find(action);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::vector<Action> Dependencies::of(const Action& action) const {
  std::vector<Action> deps;
  for_each_dependency(
      schedule_, via_comm_, action, [this](const Action& a) { return contains(a); },
      [&deps](const Action& a) { deps.push_back(a); });
  return deps;
}

}  // namespace gpipe::schedules
