#include "schedules/generators/zb_phases.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::schedules {

void append_zero_bubble_phases(std::vector<Action>& list, Stage stage, int num_microbatches, int warmup,
                               int growing) {
  const int M = num_microbatches;
  list.reserve(list.size() + 3 * static_cast<std::size_t>(std::max(M, 0)));  // F, I and W of each
  int next_f = 0;
  int next_i = 0;
  int next_w = 0;
  const auto put = [&](ActionKind kind, int& next) { list.push_back({stage, kind, Microbatch{next++}}); };
  const auto forward = [&] { put(ActionKind::F, next_f); };
  const auto input_backward = [&] { put(ActionKind::I, next_i); };
  const auto weight_backward = [&] { put(ActionKind::W, next_w); };

  for (int n = std::min(M, warmup); n > 0; --n) forward();
  for (int n = growing; n > 0 && next_f < M; --n) {
    input_backward();
    forward();
  }
  while (next_f < M) {
    input_backward();
    weight_backward();
    forward();
  }
  while (next_i < M) {
    input_backward();
    weight_backward();
  }
  while (next_w < M) weight_backward();
}

Schedule zero_bubble_schedule(std::string_view name, const ScheduleOptions& o,
                              PhaseCounts (*counts)(int rank, int num_ranks)) {
  Schedule s = empty_schedule(name, o);  // refuses a V other than 1
  for (int r = 0; r < s.num_ranks; ++r) {
    const PhaseCounts c = counts(r, s.num_ranks);
    append_zero_bubble_phases(s.ranks[static_cast<std::size_t>(r)], Stage{r}, s.num_microbatches, c.warmup,
                              c.growing);
  }
  return s;
}

}  // namespace gpipe::schedules
