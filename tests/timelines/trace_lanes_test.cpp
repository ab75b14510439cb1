// Trace lanes: overlapping transfers of one rank get threads of their own, and
// the trace reads back with the same streams.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "timelines/chrome_trace.hpp"
#include "timelines/trace_lanes.hpp"

namespace gpipe::timelines {
namespace {

TimedAction at(int rank, const char* text, std::int64_t start, std::int64_t end) {
  const schedules::Action a = schedules::parse_action(text);
  return {a, schedules::Rank{rank}, stream_of(a.kind), start, end};
}

Timeline two_ranks() {
  Timeline tl;
  tl.info.schedule_name = "hand";
  tl.info.num_ranks = 3;
  tl.info.num_stages = 3;
  tl.info.num_microbatches = 2;
  tl.info.stage_to_rank = {schedules::Rank{0}, schedules::Rank{1}, schedules::Rank{2}};
  tl.info.source = "sim";
  tl.actions = {at(1, "1F1", 0, 100),        at(1, "1SEND_F1", 100, 300),
                at(1, "1B0", 100, 200),       at(1, "1SEND_B0", 200, 260),
                at(1, "1SEND_F0", 300, 310),  at(2, "2RECV_F1", 100, 300),
                at(0, "0RECV_B0", 200, 260),  at(2, "2RECV_F0", 300, 310)};
  return tl;
}

TEST(TraceLanes, OverlappingTransfersTakeTheFirstFreeLane) {
  // 1SEND_B0 starts while 1SEND_F1 is in flight: second send lane (tid 3);
  // 1SEND_F0 starts when the first lane is free again.
  EXPECT_EQ(assign_lanes(two_ranks()), (std::vector<int>{0, 1, 0, 3, 1, 2, 2, 2}));
}

TEST(TraceLanes, ThreadNamesAndStreams) {
  EXPECT_EQ(lane_name(0), "compute");
  EXPECT_EQ(lane_name(1), "send");
  EXPECT_EQ(lane_name(2), "recv");
  EXPECT_EQ(lane_name(3), "send 2");
  EXPECT_EQ(lane_name(6), "recv 3");
  EXPECT_EQ(stream_of_lane(5), Stream::send);
  EXPECT_EQ(stream_of_lane(4), Stream::recv);
}

TEST(TraceLanes, TraceNamesTheExtraLaneAndRoundTrips) {
  const Timeline tl = two_ranks();
  const nlohmann::json trace = to_chrome_trace(tl);
  bool named = false;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "thread_name" && ev["pid"] == 1 && ev["tid"] == tid_of_lane(3)) {
      named = ev["args"]["name"] == "send 2";
    }
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(timeline_from_chrome_trace(trace, "mem").actions, tl.actions);
}

}  // namespace
}  // namespace gpipe::timelines
