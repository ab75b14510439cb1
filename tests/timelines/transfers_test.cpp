// How long a measured message took: from the later of its SEND's and its
// RECV's start to the RECV's end, in exact ns, for activations and gradients.
#include "timelines/transfers.hpp"

#include <gtest/gtest.h>

namespace gpipe::timelines {
namespace {

TimedAction timed_kind(int rank, int stage, schedules::ActionKind kind, int microbatch, std::int64_t start, std::int64_t end) {
  return TimedAction{schedules::make_action(stage, kind, microbatch), schedules::Rank{rank}, stream_of(kind), start, end};
}

TEST(MeasuredTransfers, FromTheLaterStartOfBothSidesToTheReceiveEnd) {
  Timeline t;
  t.actions = {
      timed_kind(0, 0, schedules::ActionKind::F, 0, 0, 100),
      timed_kind(0, 0, schedules::ActionKind::SEND_F, 0, 100, 110),    // sent after the receiver waited since 50
      timed_kind(1, 1, schedules::ActionKind::RECV_F, 0, 50, 400),     // 400 - 100
      timed_kind(1, 1, schedules::ActionKind::SEND_B, 0, 900, 905),    // sent before the receiver came at 1000
      timed_kind(0, 0, schedules::ActionKind::RECV_B, 0, 1000, 1200),  // 1200 - 1000
      timed_kind(1, 1, schedules::ActionKind::RECV_F, 1, 2000, 2070),  // no SEND in the trace: its own 70
  };
  const std::vector<MeasuredTransfer> transfers = measured_transfers(t);
  ASSERT_EQ(transfers.size(), 3U);
  EXPECT_EQ(transfers[0].receive, &t.actions[2]);
  EXPECT_EQ(transfers[0].took_ns, 300);
  EXPECT_EQ(transfers[1].receive, &t.actions[4]);
  EXPECT_EQ(transfers[1].took_ns, 200);
  EXPECT_EQ(transfers[2].took_ns, 70);
}

TEST(MeasuredTransfers, AReceiveThatEndsBeforeItsSendStartsTookNothing) {
  Timeline t;
  t.actions = {timed_kind(0, 0, schedules::ActionKind::SEND_F, 0, 500, 510), timed_kind(1, 1, schedules::ActionKind::RECV_F, 0, 0, 300)};
  ASSERT_EQ(measured_transfers(t).size(), 1U);
  EXPECT_EQ(measured_transfers(t).front().took_ns, 0);
}

}  // namespace
}  // namespace gpipe::timelines
