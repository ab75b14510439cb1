// Where each rank idled and what held it (sim/wait_attribution.hpp), on a
// hand-timed GPipe K = 2, M = 1 step, to the nanosecond: each gap before a
// compute action split into the peer stage's compute (until its SEND began),
// the transfer (until the RECV ended) and the rest, and the time after a
// rank's last action; the parts sum to its idle time.
#include <gtest/gtest.h>

#include "sim/wait_attribution.hpp"
#include "tests/schedules/test_support.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::sim {
namespace {

timelines::Timeline hand_timed() {
  timelines::Timeline t;
  t.info.schedule_name = "gpipe";
  t.info.num_ranks = 2;
  t.info.num_stages = 2;
  t.info.num_microbatches = 1;
  t.info.stage_to_rank = {schedules::Rank{0}, schedules::Rank{1}};
  using schedules::testing::timed;
  t.actions = {timed(0, "0F0", 0, 100),         timed(0, "0SEND_F0", 100, 110), timed(1, "1RECV_F0", 20, 130),
               timed(1, "1F0", 130, 230),       timed(1, "1B0", 230, 280),      timed(1, "1SEND_B0", 280, 290),
               timed(0, "0RECV_B0", 120, 295), timed(0, "0B0", 300, 400)};
  return t;
}

TEST(WaitAttribution, EachGapIsSplitByWhatItsActionWaitedFor) {
  const std::vector<RankWaits> w = attribute_waits(hand_timed());
  ASSERT_EQ(w.size(), 2U);
  // Rank 0 idles 100..300 before 0B0: its gradient's SEND began at 280 on
  // rank 1 (180 ns of rank 1's compute), arrived at 295 (15 ns moving), and
  // 0B0 began 5 ns later.
  EXPECT_EQ(w[0].idle_ns, 200);
  EXPECT_EQ(w[0].peer_ns, 180);
  EXPECT_EQ(w[0].transfer_ns, 15);
  EXPECT_EQ(w[0].other_ns, 5);
  EXPECT_EQ(w[0].after_last_ns, 0);
  EXPECT_EQ(w[0].longest, "0B0 (rank 0) waited 0.2 us for 1SEND_B0 (rank 1)");
  // Rank 1 idles 0..130 before 1F0 (rank 0 computing until 100, then the
  // transfer until 130) and 280..400 after its last action.
  EXPECT_EQ(w[1].idle_ns, 250);
  EXPECT_EQ(w[1].peer_ns, 100);
  EXPECT_EQ(w[1].transfer_ns, 30);
  EXPECT_EQ(w[1].other_ns, 0);
  EXPECT_EQ(w[1].after_last_ns, 120);
  for (const RankWaits& r : w) EXPECT_EQ(r.peer_ns + r.transfer_ns + r.other_ns + r.after_last_ns, r.idle_ns);
}

TEST(WaitAttribution, AGapWithNoMessageAwaitedIsOther) {
  timelines::Timeline t = hand_timed();
  t.actions.erase(t.actions.begin() + 6);  // no 0RECV_B0: nothing explains rank 0's gap
  const std::vector<RankWaits> w = attribute_waits(t);
  EXPECT_EQ(w[0].other_ns, 200);
  EXPECT_EQ(w[0].peer_ns + w[0].transfer_ns, 0);
  EXPECT_TRUE(w[0].longest.empty());
}

}  // namespace
}  // namespace gpipe::sim
