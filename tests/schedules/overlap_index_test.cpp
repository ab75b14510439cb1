// OverlapIndex: the backward paired with each forward, from an array for the
// forwards within the schedule and a map for any other (a file not yet
// validated), answering as one map of every pair would.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "schedules/overlap.hpp"

namespace gpipe::schedules {
namespace {

Action act(int stage, ActionKind kind, int mb) { return make_action(stage, kind, mb); }

Schedule two_stages_three_microbatches() {
  Schedule s;
  s.num_ranks = 1;
  s.num_stages = 2;
  s.num_microbatches = 3;
  s.ranks.resize(1);
  return s;
}

TEST(OverlapIndex, FindsTheBackwardOfEachForwardAndNoneElsewhere) {
  Schedule s = two_stages_three_microbatches();
  s.overlapped = {{act(0, ActionKind::F, 2), act(1, ActionKind::B, 0)},
                  {act(1, ActionKind::F, 1), act(0, ActionKind::I, 0)}};
  const OverlapIndex index(s);
  EXPECT_FALSE(index.empty());
  EXPECT_EQ(index.backward_of(act(0, ActionKind::F, 2)), act(1, ActionKind::B, 0));
  EXPECT_EQ(index.backward_of(act(1, ActionKind::F, 1)), act(0, ActionKind::I, 0));
  // Every other action, the neighbours of the pairs' slots included.
  for (int st = 0; st < 2; ++st) {
    for (int mb = 0; mb < 3; ++mb) {
      for (const ActionKind k : {ActionKind::F, ActionKind::B, ActionKind::I, ActionKind::W}) {
        const Action a = act(st, k, mb);
        if (a == act(0, ActionKind::F, 2) || a == act(1, ActionKind::F, 1)) continue;
        EXPECT_EQ(index.backward_of(a), std::nullopt) << to_string(a);
      }
    }
  }
}

TEST(OverlapIndex, PairsOutsideTheStagesAndMicroBatchesStillAnswer) {
  Schedule s = two_stages_three_microbatches();
  // A micro-batch past M, a stage past the last, a "forward" that is not an F:
  // what an unvalidated file may hold. None of them may alias a slot of the array.
  s.overlapped = {{act(0, ActionKind::F, 3), act(1, ActionKind::B, 1)},
                  {act(2, ActionKind::F, 0), act(1, ActionKind::B, 2)},
                  {act(0, ActionKind::B, 1), act(1, ActionKind::B, 0)}};
  const OverlapIndex index(s);
  EXPECT_EQ(index.backward_of(act(0, ActionKind::F, 3)), act(1, ActionKind::B, 1));
  EXPECT_EQ(index.backward_of(act(2, ActionKind::F, 0)), act(1, ActionKind::B, 2));
  EXPECT_EQ(index.backward_of(act(0, ActionKind::B, 1)), act(1, ActionKind::B, 0));
  EXPECT_EQ(index.backward_of(act(1, ActionKind::F, 0)), std::nullopt);  // what 0F3 would alias
  EXPECT_EQ(index.backward_of(act(0, ActionKind::F, 0)), std::nullopt);
}

TEST(OverlapIndex, AForwardPairedWithAForwardStillAnswers) {
  Schedule s = two_stages_three_microbatches();
  s.overlapped = {{act(0, ActionKind::F, 1), act(1, ActionKind::F, 0)}};
  EXPECT_EQ(OverlapIndex(s).backward_of(act(0, ActionKind::F, 1)), act(1, ActionKind::F, 0));
}

TEST(OverlapIndex, TheFirstPairOfAForwardWins) {
  Schedule s = two_stages_three_microbatches();
  s.overlapped = {{act(0, ActionKind::F, 1), act(1, ActionKind::B, 0)},
                  {act(0, ActionKind::F, 1), act(1, ActionKind::B, 2)}};
  EXPECT_EQ(OverlapIndex(s).backward_of(act(0, ActionKind::F, 1)), act(1, ActionKind::B, 0));
  // Also where the first goes to the map and the second would fit the array.
  s.overlapped = {{act(0, ActionKind::F, 1), act(1, ActionKind::F, 0)},
                  {act(0, ActionKind::F, 1), act(1, ActionKind::B, 2)}};
  EXPECT_EQ(OverlapIndex(s).backward_of(act(0, ActionKind::F, 1)), act(1, ActionKind::F, 0));
}

TEST(OverlapIndex, PairAtNeedsTheBackwardRightAfterItsForward) {
  Schedule s = two_stages_three_microbatches();
  s.overlapped = {{act(0, ActionKind::F, 2), act(1, ActionKind::B, 0)}};
  const OverlapIndex index(s);
  const std::vector<Action> side_by_side = {act(0, ActionKind::F, 2), act(1, ActionKind::B, 0)};
  const std::vector<Action> apart = {act(0, ActionKind::F, 2), act(1, ActionKind::F, 2), act(1, ActionKind::B, 0)};
  EXPECT_TRUE(index.pair_at(side_by_side, 0));
  EXPECT_FALSE(index.pair_at(side_by_side, 1));
  EXPECT_FALSE(index.pair_at(apart, 0));
  EXPECT_TRUE(OverlapIndex().empty());
  EXPECT_FALSE(OverlapIndex().pair_at(side_by_side, 0));
}

}  // namespace
}  // namespace gpipe::schedules
