#include "schedules/generators/interleaved_steps.hpp"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::schedules {

InterleavedShape interleaved_shape(std::string_view name, int num_ranks, int stages_per_rank,
                                   int num_microbatches) {
  const int rounds = std::max(1, num_microbatches / num_ranks);
  if (num_microbatches % rounds != 0) {
    throw InputError(fmt::format(
        "--schedule {} needs --microbatches to be a multiple of its number of rounds, max(1, M / K) = {}"
        " (as torch), got M = {} with K = {}",
        name, rounds, num_microbatches, num_ranks));
  }
  return {num_ranks, stages_per_rank, num_microbatches, num_microbatches / rounds};
}

int interleaved_warmup(const InterleavedShape& s, int rank, int per_hop) {
  const int last_rank_warmup = (s.stages_per_rank - 1) * s.microbatches_per_round;
  return std::min(last_rank_warmup + per_hop * (s.num_ranks - 1 - rank),
                  s.num_microbatches * s.stages_per_rank);
}

std::vector<Action> interleaved_rank_order(const InterleavedShape& s, int rank, int warmup,
                                           BackwardSplit backward) {
  const int V = s.stages_per_rank;
  const int per_round = s.microbatches_per_round;
  const int total = V * s.num_microbatches;  // forwards of the rank, and as many backwards
  // Step i of the forwards / backwards runs local stage (i / per_round) mod V,
  // backwards counting from the last local stage once the warm-up is over.
  const auto forward_stage = [&](int step) { return ((step / per_round) % V) * s.num_ranks + rank; };
  const auto backward_stage = [&](int step) {
    return (V - 1 - ((step - warmup) / per_round) % V) * s.num_ranks + rank;
  };
  std::vector<int> next_forward(static_cast<std::size_t>(V), 0);
  std::vector<int> next_backward(static_cast<std::size_t>(V), 0);
  const auto next = [&](std::vector<int>& counters, int stage) {
    return counters[static_cast<std::size_t>(stage / s.num_ranks)]++;
  };
  const ActionKind input_backward = backward.split ? ActionKind::I : ActionKind::B;

  std::vector<Action> order;
  std::deque<Action> awaiting_weight;  // I actions whose W is still to come, oldest first
  int backwards_done = 0;
  for (int step = 0; step < total + warmup; ++step) {
    if (step < total) {
      const int stage = forward_stage(step);
      order.push_back(make_action(stage, ActionKind::F, next(next_forward, stage)));
    }
    if (step < warmup) continue;
    const int stage = backward_stage(step);
    order.push_back(make_action(stage, input_backward, next(next_backward, stage)));
    if (!backward.split) continue;
    awaiting_weight.push_back(order.back());
    if (backwards_done++ >= backward.weight_lag) {
      order.push_back({awaiting_weight.front().stage, ActionKind::W, awaiting_weight.front().microbatch});
      awaiting_weight.pop_front();
    }
  }
  for (const Action& i : awaiting_weight) order.push_back({i.stage, ActionKind::W, i.microbatch});
  return order;
}

}  // namespace gpipe::schedules
