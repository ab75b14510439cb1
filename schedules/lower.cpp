#include "schedules/lower.hpp"

#include "schedules/gradient_reduction.hpp"
#include "schedules/overlap.hpp"

namespace gpipe::schedules {

bool recomputes(const Schedule& s, Rank rank, int position) {
  switch (s.recompute) {
    case RecomputePolicy::never:
    case RecomputePolicy::full:  // rebuilt inside B, no R
      return false;
    case RecomputePolicy::stage:
      return true;
    case RecomputePolicy::stage_except_last: {
      if (position == 0) return true;
      const auto& list = s.actions(rank);
      const Action& backward = list[static_cast<std::size_t>(position)];
      const Action& before = list[static_cast<std::size_t>(position - 1)];
      return !(before.kind == ActionKind::F && before.stage == backward.stage &&
               before.microbatch == backward.microbatch);
    }
  }
  return false;
}

Schedule lower(const Schedule& compute_only) {
  if (compute_only.is_lowered()) return compute_only;
  using K = ActionKind;
  const OverlapIndex pairs(compute_only);
  Schedule out = compute_only;
  for (int r = 0; r < compute_only.num_ranks; ++r) {
    const auto& in = compute_only.actions(Rank{r});
    auto& list = out.ranks[static_cast<std::size_t>(r)];
    list.clear();
    list.reserve(in.size() * 2 + 1);
    const auto from_prev_rank = [&](const Action& a) {
      return a.stage.value > 0 && compute_only.crosses_ranks(Stage{a.stage.value - 1});
    };
    const auto before = [&](int i) {
      const Action a = in[static_cast<std::size_t>(i)];
      if (a.kind == K::F && from_prev_rank(a)) list.push_back({a.stage, K::RECV_F, a.microbatch});
      if (is_input_backward(a.kind)) {
        if (recomputes(compute_only, Rank{r}, i)) list.push_back({a.stage, K::R, a.microbatch});
        if (compute_only.crosses_ranks(a.stage)) list.push_back({a.stage, K::RECV_B, a.microbatch});
      }
    };
    const auto after = [&](int i) {
      const Action a = in[static_cast<std::size_t>(i)];
      if (a.kind == K::F && compute_only.crosses_ranks(a.stage)) list.push_back({a.stage, K::SEND_F, a.microbatch});
      if (is_input_backward(a.kind) && from_prev_rank(a)) list.push_back({a.stage, K::SEND_B, a.microbatch});
    };
    const ReductionPlaces places(compute_only, in);
    const auto reduce_after = [&](int i) {
      places.after(i, in[static_cast<std::size_t>(i)].stage,
                   [&](Stage st) { list.push_back({st, K::REDUCE_GRAD, Microbatch{0}}); });
    };
    for (int i = 0; i < static_cast<int>(in.size()); ++i) {
      // An overlapped pair stays side by side: what either needs goes before
      // both, what either sends after both, as torch lowers OVERLAP_F_B.
      const int last = pairs.pair_at(in, static_cast<std::size_t>(i)) ? i + 1 : i;
      for (int j = i; j <= last; ++j) before(j);
      for (int j = i; j <= last; ++j) list.push_back(in[static_cast<std::size_t>(j)]);
      for (int j = i; j <= last; ++j) after(j);
      for (int j = i; j <= last; ++j) reduce_after(j);
      i = last;
    }
    if (places.any()) {
      for_each_reduction_at_end(compute_only, Rank{r}, places.last_backward(), [&](const Action& a) { list.push_back(a); });
    }
    for (int s = 0; s < compute_only.num_stages; ++s) {
      if (compute_only.rank_of(Stage{s}) == Rank{r}) list.push_back({Stage{s}, K::STEP, Microbatch{0}});
    }
  }
  return out;
}

}  // namespace gpipe::schedules
