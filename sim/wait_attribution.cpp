#include "sim/wait_attribution.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "schedules/action.hpp"

namespace gpipe::sim {

namespace {

using schedules::Action;
using schedules::ActionKind;
using timelines::TimedAction;

std::string time_text(std::int64_t ns) {
  return ns >= 1'000'000 ? fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6)
                         : fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
}

}  // namespace

std::vector<RankWaits> attribute_waits(const timelines::Timeline& timeline) {
  std::vector<RankWaits> out;
  if (timeline.actions.empty()) return out;
  std::int64_t begin = timeline.actions.front().start_ns, end = timeline.actions.front().end_ns;
  std::map<std::pair<int, Action>, const TimedAction*> by_key;
  for (const TimedAction& a : timeline.actions) {
    begin = std::min(begin, a.start_ns);
    end = std::max(end, a.end_ns);
    by_key[{a.rank.value, a.action}] = &a;
  }
  const int stages = timeline.info.num_stages;
  const auto rank_of = [&](int stage) -> std::optional<int> {
    if (stage < 0 || stage >= static_cast<int>(timeline.info.stage_to_rank.size())) return std::nullopt;
    return timeline.info.stage_to_rank[static_cast<std::size_t>(stage)].value;
  };
  for (int r = 0; r < timeline.info.num_ranks; ++r) {
    RankWaits w;
    w.rank = r;
    std::vector<const TimedAction*> compute;
    for (const TimedAction& a : timeline.actions) {
      if (a.rank.value == r && a.stream == timelines::Stream::compute) compute.push_back(&a);
    }
    std::ranges::sort(compute, {}, [](const TimedAction* a) { return a->start_ns; });
    std::int64_t free_from = begin;
    for (const TimedAction* x : compute) {
      const std::int64_t gap_end = x->start_ns;
      if (gap_end > free_from) {
        const std::int64_t gap = gap_end - free_from;
        w.idle_ns += gap;
        std::int64_t explained = 0;
        const auto [s, kind, m] = x->action;
        const bool forward = kind == ActionKind::F;
        const bool backward = kind == ActionKind::B || kind == ActionKind::I;
        const bool has_peer = forward ? s.value > 0 : backward && s.value < stages - 1;
        if (has_peer) {
          const Action recv{s, forward ? ActionKind::RECV_F : ActionKind::RECV_B, m};
          const Action send{schedules::Stage{s.value + (forward ? -1 : 1)},
                            forward ? ActionKind::SEND_F : ActionKind::SEND_B, m};
          const auto received = by_key.find({r, recv});
          if (received != by_key.end() && received->second->end_ns > free_from) {
            const std::int64_t waited_to = std::min(received->second->end_ns, gap_end);
            std::int64_t sent_at = free_from;  // no SEND seen: all of it in transfer
            const auto peer = rank_of(send.stage.value);
            if (peer) {
              if (const auto sent = by_key.find({*peer, send}); sent != by_key.end()) {
                sent_at = std::clamp(sent->second->start_ns, free_from, waited_to);
              }
            }
            w.peer_ns += sent_at - free_from;
            w.transfer_ns += waited_to - sent_at;
            explained = waited_to - free_from;
            if (explained > w.longest_ns) {
              w.longest_ns = explained;
              w.longest = fmt::format("{} (rank {}) waited {} for {}{}", to_string(x->action), r, time_text(explained),
                                      to_string(send), peer ? fmt::format(" (rank {})", *peer) : std::string());
            }
          }
        }
        w.other_ns += gap - explained;
      }
      free_from = std::max(free_from, x->end_ns);
    }
    w.after_last_ns = end - free_from;
    w.idle_ns += w.after_last_ns;
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpipe::sim
