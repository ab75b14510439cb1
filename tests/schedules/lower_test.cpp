// Lowering: R per the recompute policy, SEND/RECV where stages cross ranks, STEP last.
#include <gtest/gtest.h>

#include "schedules/dependencies.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::schedules {
namespace {

using testing::program;

Schedule gpipe_with(int k, int m, RecomputePolicy recompute,
                    BackwardOrder order = BackwardOrder::reverse) {
  ScheduleOptions o;
  o.num_ranks = k;
  o.num_microbatches = m;
  o.recompute = recompute;
  o.backward_order = order;
  return generate_gpipe(o);
}

TEST(Lower, InsertsCommAndStepWithoutRecompute) {
  const Schedule s = lower(gpipe_with(2, 2, RecomputePolicy::never));
  EXPECT_TRUE(s.is_lowered());
  EXPECT_EQ(program(s, 0), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B1 0B1 0RECV_B0 0B0 0STEP");
  EXPECT_EQ(program(s, 1), "1RECV_F0 1F0 1RECV_F1 1F1 1B1 1SEND_B1 1B0 1SEND_B0 1STEP");
}

TEST(Lower, ExceptLastSkipsTheBackwardRightAfterItsForward) {
  const Schedule s = lower(gpipe_with(2, 2, RecomputePolicy::stage_except_last));
  EXPECT_EQ(program(s, 0), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B1 0B1 0R0 0RECV_B0 0B0 0STEP");
  EXPECT_EQ(program(s, 1), "1RECV_F0 1F0 1RECV_F1 1F1 1B1 1SEND_B1 1R0 1B0 1SEND_B0 1STEP");
}

TEST(Lower, AlwaysRecomputesEveryMicrobatch) {
  const Schedule s = lower(gpipe_with(1, 3, RecomputePolicy::stage));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0R2 0B2 0R1 0B1 0R0 0B0 0STEP");
}

TEST(Lower, ExceptLastWithForwardOrderRecomputesAll) {
  // B0 follows F2, so no backward directly follows its own forward.
  const Schedule s = lower(gpipe_with(1, 3, RecomputePolicy::stage_except_last, BackwardOrder::forward));
  EXPECT_EQ(program(s, 0), "0F0 0F1 0F2 0R0 0B0 0R1 0B1 0R2 0B2 0STEP");
}

TEST(Lower, OneFOneBLastRankNeverRecomputesUnderExceptLast) {
  ScheduleOptions o;
  o.num_ranks = 2;
  o.num_microbatches = 3;
  o.recompute = RecomputePolicy::stage_except_last;
  const Schedule s = lower(generate_1f1b(o));
  EXPECT_EQ(program(s, 1),
            "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1RECV_F2 1F2 1B2 1SEND_B2 1STEP");
  EXPECT_EQ(program(s, 0),
            "0F0 0SEND_F0 0F1 0SEND_F1 0R0 0RECV_B0 0B0 0F2 0SEND_F2 0R1 0RECV_B1 0B1 0R2 0RECV_B2 0B2 "
            "0STEP");
}

TEST(Lower, StagesOnTheSameRankExchangeWithoutComm) {
  Schedule s = gpipe_with(2, 1, RecomputePolicy::never);
  s.num_ranks = 1;
  s.stage_to_rank = {Rank{0}, Rank{0}};
  s.ranks = {{make_action(0, ActionKind::F, 0), make_action(1, ActionKind::F, 0),
              make_action(1, ActionKind::B, 0), make_action(0, ActionKind::B, 0)}};
  EXPECT_EQ(program(lower(s), 0), "0F0 1F0 1B0 0B0 0STEP 1STEP");
}

TEST(Lower, IsIdempotent) {
  const Schedule once = lower(gpipe_with(3, 4, RecomputePolicy::stage));
  EXPECT_EQ(lower(once), once);
}

TEST(Dependencies, FollowTheDataThroughCommWhenLowered) {
  const Schedule compute_only = gpipe_with(3, 2, RecomputePolicy::stage);
  const Schedule lowered = lower(compute_only);
  const Dependencies plain(compute_only);
  const Dependencies low(lowered);
  using V = std::vector<Action>;
  const auto a = [](int s, ActionKind k, int m) { return make_action(s, k, m); };
  EXPECT_EQ(plain.of(a(1, ActionKind::F, 1)), V{a(0, ActionKind::F, 1)});
  EXPECT_EQ(low.of(a(1, ActionKind::F, 1)), V{a(1, ActionKind::RECV_F, 1)});
  EXPECT_EQ(low.of(a(1, ActionKind::RECV_F, 1)), V{a(0, ActionKind::SEND_F, 1)});
  EXPECT_EQ(plain.of(a(1, ActionKind::B, 0)), (V{a(1, ActionKind::F, 0), a(2, ActionKind::B, 0)}));
  EXPECT_EQ(low.of(a(1, ActionKind::B, 0)),
            (V{a(1, ActionKind::F, 0), a(1, ActionKind::R, 0), a(1, ActionKind::RECV_B, 0)}));
  EXPECT_EQ(low.of(a(0, ActionKind::RECV_B, 0)), V{a(1, ActionKind::SEND_B, 0)});
  EXPECT_EQ(low.of(a(2, ActionKind::STEP, 0)), (V{a(2, ActionKind::B, 0), a(2, ActionKind::B, 1)}));
  EXPECT_TRUE(plain.of(a(0, ActionKind::F, 0)).empty());
  const auto where = low.position(a(1, ActionKind::R, 1));
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->rank, Rank{1});
  EXPECT_EQ(lowered.actions(Rank{1})[static_cast<std::size_t>(where->step)], a(1, ActionKind::R, 1));
}

TEST(Dependencies, SplitBackwardUsesInputGradient) {
  Schedule s;
  s.name = "split";
  s.num_ranks = 2;
  s.num_stages = 2;
  s.num_microbatches = 1;
  s.stage_to_rank = {Rank{0}, Rank{1}};
  s.ranks = {{parse_action("0F0"), parse_action("0I0"), parse_action("0W0")},
             {parse_action("1F0"), parse_action("1I0"), parse_action("1W0")}};
  const Dependencies d(s);
  EXPECT_EQ(d.of(parse_action("0I0")), (std::vector<Action>{parse_action("0F0"), parse_action("1I0")}));
  EXPECT_EQ(d.of(parse_action("1W0")), std::vector<Action>{parse_action("1I0")});
  EXPECT_EQ(d.of(parse_action("1STEP")), std::vector<Action>{parse_action("1W0")});
}

}  // namespace
}  // namespace gpipe::schedules
