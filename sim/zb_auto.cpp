#include "sim/zb_auto.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "schedules/generators/zb_greedy.hpp"
#include "sim/engine.hpp"

namespace gpipe::sim {
namespace {

using schedules::ActionKind;
using schedules::Schedule;

// Sizes differ by at most one, largest first: micro-batch 0 is the costliest.
constexpr schedules::Microbatch kLargest{0};

schedules::ZbGreedyCosts greedy_costs(int num_ranks, const CostModel& costs, const LinkModel& links) {
  schedules::ZbGreedyCosts c;
  for (int s = 0; s < num_ranks; ++s) {
    const schedules::Stage stage{s};
    c.forward_ns.push_back(costs.duration_ns({stage, ActionKind::F, kLargest}));
    c.input_backward_ns.push_back(costs.duration_ns({stage, ActionKind::I, kLargest}));
    c.weight_backward_ns.push_back(costs.duration_ns({stage, ActionKind::W, kLargest}));
    if (s + 1 < num_ranks) {
      c.transfer_ns.push_back(links.transfer_ns(schedules::Rank{s}, schedules::Rank{s + 1},
                                                costs.boundary_bytes(stage, kLargest)));
    }
  }
  return c;
}

// The most micro-batches rank r's budget holds by docs/design.md's memory rule: A
// bytes each, or, when recomputing, the boundary input In each plus one
// stage's A - In for the one being recomputed. An estimate for the greedy's
// caps only; the simulator has the last word.
std::vector<int> budget_caps(const schedules::ScheduleOptions& o, const CostModel& costs,
                             const std::vector<std::int64_t>& budget) {
  constexpr int kUnbounded = std::numeric_limits<int>::max();
  std::vector<int> caps(static_cast<std::size_t>(o.num_ranks), kUnbounded);
  if (budget.empty()) return caps;
  for (int r = 0; r < o.num_ranks; ++r) {
    const std::int64_t a = costs.activation_bytes(schedules::Stage{r}, kLargest);
    const std::int64_t in = costs.stashed_input_bytes(schedules::Stage{r}, kLargest);
    const bool recomputing = o.recompute != schedules::RecomputePolicy::never;
    const std::int64_t each = recomputing ? in : a;
    const std::int64_t room = budget[static_cast<std::size_t>(r)] - (recomputing ? a - in : 0);
    if (each > 0) {
      caps[static_cast<std::size_t>(r)] = static_cast<int>(std::clamp<std::int64_t>(room / each, 1, kUnbounded));
    }
  }
  return caps;
}

struct Judged {
  ZbAutoCandidate summary;
  std::vector<std::int64_t> peaks;  // per rank
};

class Search {
 public:
  Search(const CostModel& costs, const LinkModel& links, const ZbAutoOptions& options)
      : costs_(costs), links_(links), budget_(options.activation_budget_bytes) {
    sim_.record_timeline = false;
    sim_.validate = false;  // generated: every generator's output is validated in tests
    sim_.link_sharing = options.link_sharing;
  }

  void consider(std::string label, Schedule schedule) {
    if (!seen_.insert(schedule.ranks).second) return;  // another policy made the same order
    const SimResult r = simulate(schedule, costs_, links_, sim_);
    Judged j;
    j.summary.label = std::move(label);
    j.summary.step_time_ns = r.metrics.step_time_ns;
    for (std::size_t rank = 0; rank < r.metrics.ranks.size(); ++rank) {
      const std::int64_t peak = r.metrics.ranks[rank].peak_activation_bytes;
      j.peaks.push_back(peak);
      j.summary.peak_activation_bytes = std::max(j.summary.peak_activation_bytes, peak);
      if (!budget_.empty() && peak > budget_[rank]) j.summary.fits = false;
    }
    if (j.summary.fits && (!best_ || better(j.summary, judged_[*best_].summary))) {
      best_ = judged_.size();
      best_schedule_ = std::move(schedule);
    }
    judged_.push_back(std::move(j));
  }

  ZbAutoResult result() && {
    if (!best_) throw InputError(nothing_fits());
    ZbAutoResult out;
    out.schedule = std::move(best_schedule_);
    out.schedule.name = std::string(kZbAuto);
    out.chosen = judged_[*best_].summary.label;
    out.step_time_ns = judged_[*best_].summary.step_time_ns;
    for (Judged& j : judged_) out.candidates.push_back(std::move(j.summary));
    return out;
  }

 private:
  static bool better(const ZbAutoCandidate& a, const ZbAutoCandidate& b) {
    if (a.step_time_ns != b.step_time_ns) return a.step_time_ns < b.step_time_ns;
    return a.peak_activation_bytes < b.peak_activation_bytes;  // equal: the earlier stays
  }

  // Names the candidate that overshoots least, and where.
  std::string nothing_fits() const {
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    std::string text;
    for (const Judged& j : judged_) {
      std::size_t worst = 0;
      for (std::size_t r = 0; r < j.peaks.size(); ++r) {
        if (j.peaks[r] - budget_[r] > j.peaks[worst] - budget_[worst]) worst = r;
      }
      if (j.peaks[worst] - budget_[worst] < least) {
        least = j.peaks[worst] - budget_[worst];
        text = fmt::format("zb-auto: no schedule fits the memory limit; the leanest ({}) holds {} bytes of "
                           "activations on rank {}, over its budget of {} bytes",
                           j.summary.label, j.peaks[worst], worst, budget_[worst]);
      }
    }
    return text;
  }

  const CostModel& costs_;
  const LinkModel& links_;
  const std::vector<std::int64_t>& budget_;
  SimOptions sim_;
  std::set<std::vector<std::vector<schedules::Action>>> seen_;
  std::vector<Judged> judged_;
  std::optional<std::size_t> best_;
  Schedule best_schedule_;
};

}  // namespace

std::vector<std::string> predictable_schedule_names() {
  std::vector<std::string> names = schedules::schedule_names();
  names.emplace_back(kZbAuto);
  return names;
}

ZbAutoResult search_zb_auto(const schedules::ScheduleOptions& options, const CostModel& costs,
                            const LinkModel& links, const ZbAutoOptions& search) {
  const int K = options.num_ranks;
  const int M = options.num_microbatches;
  if (!search.activation_budget_bytes.empty() &&
      static_cast<int>(search.activation_budget_bytes.size()) != K) {
    throw InputError(fmt::format("zb-auto: {} activation budgets for {} ranks",
                                 search.activation_budget_bytes.size(), K));
  }
  Search s(costs, links, search);
  for (const char* name : {"1f1b", "zb-h1", "zb-h2"}) s.consider(name, schedules::generate(name, options));

  const schedules::ZbGreedyCosts greedy = greedy_costs(K, costs, links);
  const std::vector<int> room = budget_caps(options, costs, search.activation_budget_bytes);
  std::set<std::vector<int>> tried_caps;
  for (const bool staircase : {false, true}) {
    for (int cap = 1; cap <= std::min(M, 3 * K); ++cap) {
      std::vector<int> caps;
      for (int r = 0; r < K; ++r) {
        caps.push_back(std::min(staircase ? std::max(1, cap - r) : cap, room[static_cast<std::size_t>(r)]));
      }
      if (!tried_caps.insert(caps).second) continue;
      for (const auto first : {schedules::ReadyFirst::input_backward, schedules::ReadyFirst::forward}) {
        for (const auto fill : {schedules::WeightFill::eager, schedules::WeightFill::gaps_only}) {
          const schedules::ZbGreedyPolicy policy{caps, first, fill};
          s.consider("greedy: " + schedules::to_string(policy),
                     schedules::greedy_zero_bubble(options, greedy, policy));
        }
      }
    }
  }
  return std::move(s).result();
}

}  // namespace gpipe::sim
