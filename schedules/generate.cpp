#include "schedules/generate.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"
#include "schedules/generators/zb_h1.hpp"
#include "schedules/generators/zb_h2.hpp"

namespace gpipe::schedules {

// The skeleton of the single-stage families: K ranks, stage r on rank r.
Schedule empty_schedule(std::string_view name, const ScheduleOptions& o) {
  (void)stages_per_rank(name, o, kOneStagePerRank);
  return schedules::empty_schedule(name, o, one_stage_per_rank(o.num_ranks));
}

std::string_view to_string(BackwardOrder order) {
  return order == BackwardOrder::reverse ? "reverse" : "forward";
}

std::optional<BackwardOrder> parse_backward_order(std::string_view text) {
  if (text == "reverse") return BackwardOrder::reverse;
  if (text == "forward") return BackwardOrder::forward;
  return std::nullopt;
}

Schedule generate_gpipe(const ScheduleOptions& o) {
  Schedule s = empty_schedule("gpipe", o);
  const int M = o.num_microbatches;
  for (int r = 0; r < s.num_ranks; ++r) {
    auto& list = s.ranks[static_cast<std::size_t>(r)];
    list.reserve(2 * static_cast<std::size_t>(M));  // a sweep makes thousands: no regrowing
    for (int m = 0; m < M; ++m) list.push_back(make_action(r, ActionKind::F, m));
    for (int i = 0; i < M; ++i) {
      const int m = o.backward_order == BackwardOrder::reverse ? M - 1 - i : i;
      list.push_back(make_action(r, ActionKind::B, m));
    }
  }
  return s;
}

Schedule generate_1f1b(const ScheduleOptions& o) {
  Schedule s = empty_schedule("1f1b", o);
  const int K = o.num_ranks;
  const int M = o.num_microbatches;
  for (int r = 0; r < K; ++r) {
    auto& list = s.ranks[static_cast<std::size_t>(r)];
    list.reserve(2 * static_cast<std::size_t>(M));
    int next_f = std::min(M, K - r);
    for (int m = 0; m < next_f; ++m) list.push_back(make_action(r, ActionKind::F, m));
    for (int next_b = 0; next_b < M; ++next_b) {
      list.push_back(make_action(r, ActionKind::B, next_b));
      if (next_f < M) list.push_back(make_action(r, ActionKind::F, next_f++));
    }
  }
  return s;
}

namespace {

// Every generator by name, in the order help texts list them: the one list
// that generate() dispatches on and schedule_names() reports.
struct NamedGenerator {
  std::string_view name;
  Schedule (*generate)(const ScheduleOptions&);
  bool chosen_stages_per_rank = false;  // takes any V >= 2 (kSeveralStagesPerRank)
};
constexpr NamedGenerator kGenerators[] = {
    {"gpipe", generate_gpipe},
    {"1f1b", generate_1f1b},
    {"interleaved-1f1b", generate_interleaved_1f1b, true},
    {"looped-bfs", generate_looped_bfs, true},
    {"interleaved-zb", generate_interleaved_zb, true},
    {"zbv", generate_zbv},
    {"dualpipev", generate_dualpipev},
    {"zb-h1", generate_zb_h1},
    {"zb-h2", generate_zb_h2},
};

}  // namespace

std::vector<std::string> schedule_names() {
  std::vector<std::string> names;
  for (const NamedGenerator& g : kGenerators) names.emplace_back(g.name);
  return names;
}

bool takes_stages_per_rank(std::string_view name) {
  for (const NamedGenerator& g : kGenerators) {
    if (g.name == name) return g.chosen_stages_per_rank;
  }
  return false;
}

Schedule generate(std::string_view name, const ScheduleOptions& options) {
  for (const NamedGenerator& g : kGenerators) {
    if (g.name == name) return g.generate(options);
  }
  throw InputError(fmt::format("unknown schedule '{}' (known: {})", name,
                               fmt::join(schedule_names(), ", ")));
}

}  // namespace gpipe::schedules
