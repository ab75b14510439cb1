// One shared link (processor sharing) against hand-computed completion times.
#include <gtest/gtest.h>

#include <vector>

#include "sim/shared_link.hpp"

namespace gpipe::sim {
namespace {

struct Done {
  int id;
  std::int64_t sent_ns;
  std::int64_t done_ns;
  bool operator==(const Done&) const = default;
};

// Runs the link to `until` and returns what completed, in completion order.
std::vector<Done> drain(SharedLink& link, std::int64_t until = 1'000'000'000) {
  std::vector<Done> out;
  for (std::int64_t t = link.next_event_ns(); t <= until; t = link.next_event_ns()) {
    link.advance(t);
    for (const auto& c : link.completed()) out.push_back({c.tag.producer, c.sent_ns, c.done_ns});
    link.clear_completed();
  }
  return out;
}

SharedLink::Tag tag(int id) { return {id, id}; }

TEST(SharedLink, OneTransferTakesLatencyThenItsWork) {
  SharedLink link(100);
  link.send(50, 1'000, tag(0));
  EXPECT_EQ(link.next_event_ns(), 150);  // starts draining
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 50, 1'150}}));
  EXPECT_EQ(link.next_event_ns(), SharedLink::kNever);
  EXPECT_EQ(link.in_flight(), 0u);
}

TEST(SharedLink, TwoEqualTransfersStartingTogetherFinishTogether) {
  // latency + 2 * work: each drains at half the bandwidth throughout.
  SharedLink link(100);
  link.send(0, 1'000, tag(0));
  link.send(0, 1'000, tag(1));
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 0, 2'100}, {1, 0, 2'100}}));
}

TEST(SharedLink, ATransferJoiningHalfwaySlowsTheFirst) {
  // A drains alone from 100; B starts draining at 600, when A has 500 left.
  // Sharing, A needs 1000 ns more (done at 1600); B then has 500 left alone.
  SharedLink link(100);
  link.send(0, 1'000, tag(0));
  link.send(500, 1'000, tag(1));
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 0, 1'600}, {1, 500, 2'100}}));
}

TEST(SharedLink, LatencyIsNotShared) {
  // Zero-byte messages only wait out the latency, however many are in flight.
  SharedLink link(25);
  link.send(10, 0, tag(0));
  link.send(20, 0, tag(1));
  link.send(30, 0, tag(2));
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 10, 35}, {1, 20, 45}, {2, 30, 55}}));
}

TEST(SharedLink, ProcessorSharingClosedForm) {
  // n transfers sent together with works w1 < ... < wn (no latency): the i-th
  // completes at w1 + ... + w(i-1) + (n - i + 1) * wi.
  SharedLink link(0);
  for (int i = 0; i < 5; ++i) link.send(0, 1'000 * (i + 1), tag(i));
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 0, 5'000}, {1, 0, 9'000}, {2, 0, 12'000},
                                            {3, 0, 14'000}, {4, 0, 15'000}}));
}

TEST(SharedLink, SharesAreExactUpToSixteenAndRoundUpBeyond) {
  // 16 transfers of 1 ns of work each: 1/16 ns each per ns, done at exactly 16.
  SharedLink exact(0);
  for (int i = 0; i < 16; ++i) exact.send(0, 1, tag(i));
  const auto done16 = drain(exact);
  ASSERT_EQ(done16.size(), 16u);
  for (const auto& d : done16) EXPECT_EQ(d.done_ns, 16);
  // 17 ways: 720720 / 17 is not whole, but 17 ns of 17-way sharing is one
  // solo ns exactly, so nothing is lost and all finish together at 17.
  SharedLink rounded(0);
  for (int i = 0; i < 17; ++i) rounded.send(0, 1, tag(i));
  const auto done17 = drain(rounded);
  ASSERT_EQ(done17.size(), 17u);
  for (const auto& d : done17) EXPECT_EQ(d.done_ns, 17);
  // 7 ways over 3 ns of work each, then one more joins at 1 ns.
  SharedLink joined(0);
  for (int i = 0; i < 7; ++i) joined.send(0, 3, tag(i));
  joined.send(1, 3, tag(7));
  const auto done = drain(joined);
  ASSERT_EQ(done.size(), 8u);
  // By 1 ns the seven have 1/7 each; eight then share, and the seven need
  // 20/7 * 8 = 22.86 ns more: done at 23.86, rounded up to 24. The eighth has
  // had 23/8 by then (the rounding ns included) and drains its last 1/8 ns
  // alone: 24.125, rounded up to 25 (exactly it would be 24).
  for (int i = 0; i < 7; ++i) EXPECT_EQ(done[static_cast<std::size_t>(i)].done_ns, 24);
  EXPECT_EQ(done[7].done_ns, 25);
}

TEST(SharedLink, ZeroWorkWithoutLatencyCompletesAtOnce) {
  SharedLink link(0);
  link.send(7, 0, tag(0));
  EXPECT_EQ(link.next_event_ns(), 7);
  EXPECT_EQ(drain(link), (std::vector<Done>{{0, 7, 7}}));
}

TEST(SharedLink, SendingAfterAnIdleSpellStartsAfresh) {
  SharedLink link(10);
  link.send(0, 100, tag(0));
  EXPECT_EQ(drain(link, 500), (std::vector<Done>{{0, 0, 110}}));
  link.send(1'000, 100, tag(1));
  EXPECT_EQ(drain(link), (std::vector<Done>{{1, 1'000, 1'110}}));
}

}  // namespace
}  // namespace gpipe::sim
