// ZB-V (Qi et al. 2024, Section 6), as torch's ZBVZeroBubble: two stages per
// rank in a V (rank r holds stages r and 2K-1-r, so the last rank runs the
// middle two back to back and the loss sits on rank 0), backwards split into
// I and W. Rank r warms up with 2(K-r)-1 forwards of its first stage, meets
// the micro-batches coming back down the V, and then runs F, I, W of one
// stage and then of the other; the cool-down runs Is first and drains the Ws.
// torch plans max(2K-1, M) micro-batches, enough to fill the V, and drops
// the actions of those beyond M; so do we.
//
// K=2, M=4 (stages 0 and 3 on rank 0, 1 and 2 on rank 1):
//
//   rank 0: 0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1
//           0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3
//   rank 1: 1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3
//           2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3
#include <algorithm>
#include <cassert>

#include "schedules/generators/multi_stage.hpp"
#include "schedules/generators/skeleton.hpp"

namespace gpipe::schedules {
namespace {

// One of the rank's two stages with its micro-batch counters.
struct Chunk {
  int stage = 0;
  int forwards = 0;
  int inputs = 0;   // I actions so far
  int weights = 0;  // W actions so far (the cool-down only)
};

std::vector<Action> zbv_rank_order(int K, int r, int planned) {
  Chunk first{r}, second{2 * K - 1 - r};
  std::vector<Action> order;
  const auto forward = [&](Chunk& c) { order.push_back(make_action(c.stage, ActionKind::F, c.forwards++)); };
  const auto input = [&](Chunk& c) { order.push_back(make_action(c.stage, ActionKind::I, c.inputs++)); };
  const auto weight = [&](Chunk& c) { order.push_back(make_action(c.stage, ActionKind::W, c.weights++)); };
  // In the warm-up and steady phases each W follows its I at once.
  const auto input_and_weight = [&](Chunk& c) {
    order.push_back(make_action(c.stage, ActionKind::I, c.inputs));
    order.push_back(make_action(c.stage, ActionKind::W, c.inputs++));
  };

  for (int i = 0; i < 2 * (K - r) - 1; ++i) forward(first);
  for (int i = 0; i < r; ++i) {
    forward(second);
    forward(first);
  }
  for (int i = 0; i < K - r; ++i) {
    forward(second);
    input_and_weight(second);
  }
  while (second.forwards < first.forwards || first.forwards < planned) {
    if (first.forwards < planned) forward(first);
    input_and_weight(first);
    forward(second);
    input_and_weight(second);
  }
  first.weights = first.inputs;
  second.weights = second.inputs;
  for (int i = 0; i < r; ++i) {
    input(first);
    input(second);
  }
  for (int i = 0; i < K - r; ++i) {
    input(first);
    weight(first);
  }
  while (second.weights < second.inputs) weight(second);
  while (first.weights < first.inputs) weight(first);
  assert(first.forwards == planned && first.inputs == planned && first.weights == planned);
  assert(second.forwards == planned && second.inputs == planned && second.weights == planned);
  return order;
}

}  // namespace

Schedule generate_zbv(const ScheduleOptions& o) {
  constexpr std::string_view name = "zbv";
  (void)stages_per_rank(name, o, kTwoStagesInAV);
  Schedule s = empty_schedule(name, o, v_placement(o.num_ranks));
  const int M = o.num_microbatches;
  const int planned = std::max(2 * o.num_ranks - 1, M);
  for (int r = 0; r < o.num_ranks; ++r) {
    std::vector<Action> order = zbv_rank_order(o.num_ranks, r, planned);
    std::erase_if(order, [M](const Action& a) { return a.microbatch.value >= M; });
    s.ranks[static_cast<std::size_t>(r)] = std::move(order);
  }
  return s;
}

}  // namespace gpipe::schedules
