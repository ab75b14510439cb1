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

Action Dependencies::backward(Stage s, Microbatch m) const {
  const Action input_grad{s, ActionKind::I, m};
  return contains(input_grad) ? input_grad : Action{s, ActionKind::B, m};
}

std::vector<Action> Dependencies::of(const Action& a) const {
  using K = ActionKind;
  const Stage s = a.stage;
  const Microbatch m = a.microbatch;
  const Stage prev{s.value - 1};
  const Stage next{s.value + 1};
  const bool has_prev = s.value > 0;
  const bool has_next = s.value + 1 < schedule_.num_stages;
  std::vector<Action> deps;
  switch (a.kind) {
    case K::F:
      if (has_prev) {
        if (via_comm_ && schedule_.crosses_ranks(prev)) {
          deps.push_back({s, K::RECV_F, m});
        } else {
          deps.push_back({prev, K::F, m});
        }
      }
      break;
    case K::B:
    case K::I:
      deps.push_back({s, K::F, m});
      if (contains({s, K::R, m})) deps.push_back({s, K::R, m});
      if (has_next) {
        if (via_comm_ && schedule_.crosses_ranks(s)) {
          deps.push_back({s, K::RECV_B, m});
        } else {
          deps.push_back(backward(next, m));
        }
      }
      break;
    case K::R:
      deps.push_back({s, K::F, m});
      break;
    case K::W:
      deps.push_back({s, K::I, m});
      break;
    case K::STEP:
      for (int mb = 0; mb < schedule_.num_microbatches; ++mb) {
        const Action b = backward(s, Microbatch{mb});
        deps.push_back(b.kind == K::I ? Action{s, K::W, Microbatch{mb}} : b);
      }
      break;
    case K::SEND_F:
      deps.push_back({s, K::F, m});
      break;
    case K::RECV_F:
      deps.push_back({prev, K::SEND_F, m});
      break;
    case K::SEND_B:
      deps.push_back(backward(s, m));
      break;
    case K::RECV_B:
      deps.push_back({next, K::SEND_B, m});
      break;
  }
  return deps;
}

}  // namespace gpipe::schedules
