// zb-auto: a search for the fastest zero-bubble schedule of one stage per
// rank that fits a memory budget, judged by this simulator. After the
// zero-bubble paper's automatic schedule (Qi et al., ICLR 2024, section 4),
// whose first step is a greedy construction tried with a few flag variants,
// keeping the best (their ILP refinement is not attempted here). The layouts
// of two stages per rank (zbv, dualpipev, ...) need plans of their own and
// are weighed against this search in zb_auto_plan.hpp.
//
// The candidates, in this order:
//   1. the handcrafted schedules 1f1b, zb-h1 and zb-h2, so zb-auto is never
//      worse than the best of them that fits;
//   2. the greedy list schedule (schedules/zb_greedy.hpp) under every policy
//      of a small grid: how many micro-batches a rank may hold (1 up to
//      min(M, 3K), the same on every rank or one fewer per rank down the
//      pipeline as 1F1B's warm-up), I or F first, W eager or in gaps only;
//      each rank's cap is also lowered to what its budget holds.
// Each candidate runs on the engine (same costs, links and link sharing as
// the prediction); those whose peak activation memory exceeds a rank's
// budget are dropped, and the one with the smallest step time is kept (ties:
// the smaller peak activation memory, then the earlier candidate). All
// integer and ordered: the same inputs give the same schedule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/generate.hpp"
#include "schedules/schedule.hpp"
#include "sim/cost_model.hpp"
#include "sim/link_model.hpp"

namespace gpipe::sim {

inline constexpr std::string_view kZbAuto = "zb-auto";

// Every schedule name a prediction takes: the generators' and zb-auto.
[[nodiscard]] std::vector<std::string> predictable_schedule_names();

struct ZbAutoOptions {
  // Per rank: the most activation bytes it may hold at once. Empty: no limit.
  std::vector<std::int64_t> activation_budget_bytes;
  LinkSharing link_sharing = LinkSharing::fifo;
};

struct ZbAutoCandidate {
  std::string label;  // "zb-h1", "greedy: in flight 7, I first, W eager"
  std::int64_t step_time_ns = 0;
  std::int64_t peak_activation_bytes = 0;  // the largest over ranks
  bool fits = true;
};

struct ZbAutoResult {
  schedules::Schedule schedule;  // named "zb-auto": compute actions only
  std::string chosen;            // the label of the candidate kept
  std::int64_t step_time_ns = 0;
  std::vector<ZbAutoCandidate> candidates;  // every distinct one simulated, in order
};

// `options` gives K, M and the recompute policy (V must be 1). Throws
// InputError when no candidate fits the budget, naming the leanest one's
// peak and the budget of the rank it exceeds.
[[nodiscard]] ZbAutoResult search_zb_auto(const schedules::ScheduleOptions& options, const CostModel& costs,
                                          const LinkModel& links, const ZbAutoOptions& search = {});

}  // namespace gpipe::sim
