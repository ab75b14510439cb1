#include "schedules/generators/zb_greedy.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace gpipe::schedules {
namespace {

constexpr std::int64_t kNotYet = std::numeric_limits<std::int64_t>::max();

void check(const ScheduleOptions& o, const ZbGreedyCosts& c, const ZbGreedyPolicy& p) {
  const auto k = static_cast<std::size_t>(std::max(o.num_ranks, 0));
  if (c.forward_ns.size() != k || c.input_backward_ns.size() != k || c.weight_backward_ns.size() != k ||
      c.transfer_ns.size() + 1 != std::max<std::size_t>(k, 1) || p.max_in_flight.size() != k) {
    throw InputError(fmt::format("zb-greedy: K = {} needs K times per kind, K-1 transfers and K caps", k));
  }
  for (const auto* times : {&c.forward_ns, &c.input_backward_ns, &c.weight_backward_ns, &c.transfer_ns}) {
    if (std::ranges::any_of(*times, [](std::int64_t t) { return t < 0; })) {
      throw InputError("zb-greedy: a negative time");
    }
  }
  if (std::ranges::any_of(p.max_in_flight, [](int cap) { return cap < 1; })) {
    throw InputError(fmt::format("zb-greedy: every rank must hold at least one micro-batch, got {}",
                                 fmt::join(p.max_in_flight, ",")));
  }
}

// The greedy's own clock. Ranks decide in time order: a rank decides at time
// t once nothing still undecided can reach it before t, so "ready at t" is
// known. A rank with nothing to run waits for its next input's arrival, or
// sleeps until a neighbour's action tells it when that is.
class Greedy {
 public:
  Greedy(const ZbGreedyCosts& costs, const ZbGreedyPolicy& policy, Schedule& out)
      : costs_(costs),
        policy_(policy),
        out_(out),
        K_(out.num_ranks),
        M_(out.num_microbatches),
        ranks_(static_cast<std::size_t>(K_)),
        f_end_(static_cast<std::size_t>(K_ * M_), kNotYet),
        i_end_(static_cast<std::size_t>(K_ * M_), kNotYet) {}

  void run() {
    for (int r = 0; r < K_; ++r) wake(r, 0);
    while (!queue_.empty()) {
      const auto [t, r] = queue_.top();
      queue_.pop();
      RankState& s = state(r);
      if (t != s.queued_at) continue;  // superseded by an earlier wake
      s.queued_at = kNotYet;
      decide(r, t);
    }
    for (int r = 0; r < K_; ++r) {
      if (state(r).next_w != M_) throw std::logic_error(fmt::format("zb-greedy stalled on rank {}", r));
    }
  }

 private:
  struct RankState {
    int next_f = 0;
    int next_i = 0;
    int next_w = 0;
    std::int64_t free_at = 0;
    std::int64_t queued_at = kNotYet;  // its pending decision; kNotYet while it sleeps
  };

  RankState& state(int r) { return ranks_[static_cast<std::size_t>(r)]; }
  std::int64_t& f_end(int r, int m) { return f_end_[static_cast<std::size_t>(r * M_ + m)]; }
  std::int64_t& i_end(int r, int m) { return i_end_[static_cast<std::size_t>(r * M_ + m)]; }
  static std::int64_t at(const std::vector<std::int64_t>& v, int r) { return v[static_cast<std::size_t>(r)]; }

  // When the rank's next F could start: kNotYet when it has none left, may not
  // hold one more, or its activation's arrival is not known yet.
  std::int64_t forward_ready(int r) {
    const RankState& s = state(r);
    if (s.next_f >= M_ || s.next_f - s.next_w >= policy_.max_in_flight[static_cast<std::size_t>(r)]) {
      return kNotYet;
    }
    if (r == 0) return 0;
    const std::int64_t sent = f_end(r - 1, s.next_f);
    return sent == kNotYet ? kNotYet : sent + at(costs_.transfer_ns, r - 1);
  }

  // When the rank's next I could start: after its own F, and the gradient from below.
  std::int64_t input_backward_ready(int r) {
    const RankState& s = state(r);
    if (s.next_i >= s.next_f) return kNotYet;
    const std::int64_t own = f_end(r, s.next_i);
    if (r == K_ - 1) return own;
    const std::int64_t sent = i_end(r + 1, s.next_i);
    return sent == kNotYet ? kNotYet : std::max(own, sent + at(costs_.transfer_ns, r));
  }

  void wake(int r, std::int64_t t) {
    RankState& s = state(r);
    t = std::max(t, s.free_at);
    if (t < s.queued_at) {
      s.queued_at = t;
      queue_.emplace(t, r);
    }
  }

  void decide(int r, std::int64_t now) {
    const std::int64_t f = forward_ready(r);
    const std::int64_t i = input_backward_ready(r);
    const bool i_now = i <= now;
    const bool f_now = f <= now;
    if (i_now && (!f_now || policy_.ready_first == ReadyFirst::input_backward)) return put(r, ActionKind::I, now);
    if (f_now) return put(r, ActionKind::F, now);
    const std::int64_t next_input = std::min(f, i);
    const RankState& s = state(r);
    if (s.next_w < s.next_i) {
      const bool fits = next_input == kNotYet || now + at(costs_.weight_backward_ns, r) <= next_input;
      if (policy_.weight_fill == WeightFill::eager || fits) return put(r, ActionKind::W, now);
    }
    if (next_input != kNotYet) wake(r, next_input);
  }

  void put(int r, ActionKind kind, std::int64_t start) {
    RankState& s = state(r);
    int& next = kind == ActionKind::F ? s.next_f : kind == ActionKind::I ? s.next_i : s.next_w;
    const int m = next++;
    const auto& durations = kind == ActionKind::F   ? costs_.forward_ns
                            : kind == ActionKind::I ? costs_.input_backward_ns
                                                    : costs_.weight_backward_ns;
    const std::int64_t end = start + at(durations, r);
    s.free_at = end;
    out_.ranks[static_cast<std::size_t>(r)].push_back(make_action(r, kind, m));
    if (kind == ActionKind::F) {
      f_end(r, m) = end;
      if (r + 1 < K_) wake(r + 1, end + at(costs_.transfer_ns, r));
    } else if (kind == ActionKind::I) {
      i_end(r, m) = end;
      if (r > 0) wake(r - 1, end + at(costs_.transfer_ns, r - 1));
    }
    wake(r, end);
  }

  const ZbGreedyCosts& costs_;
  const ZbGreedyPolicy& policy_;
  Schedule& out_;
  int K_;
  int M_;
  std::vector<RankState> ranks_;
  std::vector<std::int64_t> f_end_;  // [rank * M + m]: end of F, kNotYet until placed
  std::vector<std::int64_t> i_end_;
  // (time, rank): a rank's next decision; ties go to the lower rank.
  std::priority_queue<std::pair<std::int64_t, int>, std::vector<std::pair<std::int64_t, int>>, std::greater<>>
      queue_;
};

}  // namespace

std::string to_string(const ZbGreedyPolicy& p) {
  const auto& caps = p.max_in_flight;
  const bool flat = std::ranges::all_of(caps, [&](int c) { return c == caps.front(); });
  const std::string held = flat && !caps.empty() ? fmt::format("{}", caps.front())
                                                 : fmt::format("{}", fmt::join(caps, ","));
  return fmt::format("in flight {}, {} first, W {}", held,
                     p.ready_first == ReadyFirst::input_backward ? "I" : "F",
                     p.weight_fill == WeightFill::eager ? "eager" : "in gaps");
}

Schedule greedy_zero_bubble(const ScheduleOptions& options, const ZbGreedyCosts& costs,
                            const ZbGreedyPolicy& policy) {
  Schedule s = empty_schedule("zb-greedy", options);
  check(options, costs, policy);
  for (auto& list : s.ranks) list.reserve(static_cast<std::size_t>(3 * s.num_microbatches));
  Greedy(costs, policy, s).run();
  return s;
}

}  // namespace gpipe::schedules
