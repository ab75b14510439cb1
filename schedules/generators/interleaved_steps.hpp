// The walk that torch's Interleaved1F1B and InterleavedZeroBubble share
// (torch's _get_1f1b_rank_ops): a rank runs its V x M forwards and V x M
// backwards as `warmup` forwards, then steps of one forward and one backward,
// then the backwards left. Forwards visit the rank's stages r, r+K, ... in
// turn, one round of micro-batches each; backwards visit them last to first.
#pragma once

#include <string_view>
#include <vector>

#include "schedules/action.hpp"

namespace gpipe::schedules {

struct InterleavedShape {
  int num_ranks = 1;         // K
  int stages_per_rank = 2;   // V
  int num_microbatches = 1;  // M
  int microbatches_per_round = 1;
};

// torch's rounds: the M micro-batches go through each stage in rounds of
// M / rounds, rounds = max(1, M / K), so M = 10 on K = 4 runs two rounds of
// 5. Throws InputError, as torch refuses it, when M is not a multiple of the
// number of rounds (K=4, M=9: 2 rounds).
[[nodiscard]] InterleavedShape interleaved_shape(std::string_view name, int num_ranks,
                                                 int stages_per_rank, int num_microbatches);

// Full backwards (B), or split (I then W) with each W `weight_lag` backwards
// behind its I (the zero-bubble form: W fills what would be idle).
struct BackwardSplit {
  bool split = false;
  int weight_lag = 0;
};

// Rank `rank`'s compute order; warmup <= V x M forwards come first.
[[nodiscard]] std::vector<Action> interleaved_rank_order(const InterleavedShape& shape, int rank,
                                                         int warmup, BackwardSplit backward);

// torch's _get_warmup_ops: the last rank warms up with (V-1) rounds, each hop
// before it with `per_hop` more forwards, at most all V x M.
[[nodiscard]] int interleaved_warmup(const InterleavedShape& shape, int rank, int per_hop);

}  // namespace gpipe::schedules
