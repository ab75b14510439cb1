// The Timeline type and its helpers: streams, info from a schedule, per-rank
// views, makespan and the no-overlap check.
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "tests/schedules/test_support.hpp"
#include "timelines/timeline.hpp"

namespace gpipe::timelines {
namespace {

using schedules::testing::timed;

std::string overlap_message(const Timeline& timeline) {
  try {
    check_no_overlap(timeline, "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Timeline, StreamOfEachKind) {
  EXPECT_EQ(stream_of(schedules::ActionKind::F), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::B), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::I), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::W), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::R), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::STEP), Stream::compute);
  EXPECT_EQ(stream_of(schedules::ActionKind::SEND_F), Stream::send);
  EXPECT_EQ(stream_of(schedules::ActionKind::SEND_B), Stream::send);
  EXPECT_EQ(stream_of(schedules::ActionKind::RECV_F), Stream::recv);
  EXPECT_EQ(stream_of(schedules::ActionKind::RECV_B), Stream::recv);
  EXPECT_EQ(static_cast<int>(Stream::send), 1);
  EXPECT_EQ(to_string(Stream::compute), "compute");
  EXPECT_EQ(to_string(Stream::send), "send");
  EXPECT_EQ(to_string(Stream::recv), "recv");
}

TEST(Timeline, InfoOfASchedule) {
  const schedules::Schedule s = lower(schedules::generate_gpipe(
      {.num_ranks = 4, .num_microbatches = 8, .recompute = schedules::RecomputePolicy::stage}));
  const TimelineInfo info = info_of(s);
  EXPECT_EQ(info.schedule_name, s.name);
  EXPECT_EQ(info.num_ranks, 4);
  EXPECT_EQ(info.num_stages, 4);
  EXPECT_EQ(info.num_microbatches, 8);
  EXPECT_EQ(info.recompute, schedules::RecomputePolicy::stage);
  EXPECT_EQ(info.stage_to_rank, schedules::one_stage_per_rank(4));
  EXPECT_EQ(info.source, "sim");
  EXPECT_EQ(info.device, "");
  EXPECT_EQ(info.batch_size, 0);
  EXPECT_TRUE(info.static_bytes.empty());
}

TEST(Timeline, SourcesAreSimCpuCuda) {
  EXPECT_TRUE(is_timeline_source("sim"));
  EXPECT_TRUE(is_timeline_source("cpu"));
  EXPECT_TRUE(is_timeline_source("cuda"));
  EXPECT_FALSE(is_timeline_source("gpu"));
  EXPECT_FALSE(is_timeline_source(""));
}

TEST(Timeline, ActionsOfOneRankSortedByStart) {
  Timeline tl;
  tl.actions = {timed(1, "1F1", 30, 40), timed(0, "0F0", 0, 10), timed(1, "1F0", 10, 20),
                timed(1, "1RECV_F1", 10, 25), timed(0, "0F1", 10, 20)};
  const auto rank1 = actions_of(tl, schedules::Rank{1});
  ASSERT_EQ(rank1.size(), 3u);
  // Same start: compute before recv (stream order).
  EXPECT_EQ(to_string(rank1[0].action), "1F0");
  EXPECT_EQ(to_string(rank1[1].action), "1RECV_F1");
  EXPECT_EQ(to_string(rank1[2].action), "1F1");
  EXPECT_EQ(actions_of(tl, schedules::Rank{0}).size(), 2u);
  EXPECT_TRUE(actions_of(tl, schedules::Rank{5}).empty());
}

TEST(Timeline, MakespanFromEarliestStartToLatestEnd) {
  Timeline tl;
  EXPECT_EQ(makespan_ns(tl), 0);
  tl.actions = {timed(0, "0F0", 5'000, 6'000), timed(1, "1F0", 7'000, 9'500),
                timed(0, "0SEND_F0", 6'000, 12'345)};
  EXPECT_EQ(makespan_ns(tl), 12'345 - 5'000);
  EXPECT_EQ(tl.actions[1].duration_ns(), 2'500);
}

TEST(Timeline, TouchingAndSeparateStreamsDoNotOverlap) {
  Timeline tl;
  tl.actions = {timed(0, "0F0", 0, 10),      timed(0, "0F1", 10, 20), timed(0, "0SEND_F0", 5, 15),
                timed(0, "0RECV_B0", 5, 15), timed(1, "1F0", 5, 15),  timed(0, "0B1", 20, 30),
                timed(0, "0STEP", 30, 30),   timed(0, "0B0", 30, 40)};
  EXPECT_NO_THROW(check_no_overlap(tl, "t.json"));
}

TEST(Timeline, OverlapNamesBothActions) {
  Timeline tl;
  tl.actions = {timed(2, "2F1", 10, 20), timed(2, "2F0", 0, 11)};
  const std::string message = overlap_message(tl);
  EXPECT_NE(message.find("t.json"), std::string::npos) << message;
  EXPECT_NE(message.find("2F0 [0, 11)"), std::string::npos) << message;
  EXPECT_NE(message.find("2F1 [10, 20)"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 2, compute stream"), std::string::npos) << message;
}

TEST(Timeline, TransfersOnDifferentLinksMayOverlap) {
  Timeline tl;
  tl.info.num_ranks = 2;
  tl.actions = {timed(1, "1F0", 0, 100), timed(1, "1SEND_F0", 100, 200), timed(1, "1B1", 100, 200),
                timed(1, "1SEND_B1", 150, 250)};
  EXPECT_NO_THROW(check_no_overlap(tl, "t.json"));
}

}  // namespace
}  // namespace gpipe::timelines
