// The CUPTI tracer's host side: from (mocked) activity records to each IR
// action's GPU interval, with unmatched and dropped records counted.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"
#include "exec/cuda/cupti/mock_activity_source.hpp"

namespace gpipe::exec::cuda::cupti {
namespace {

using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;
using timelines::Stream;

KernelRecord kernel(std::uint32_t correlation, std::int64_t start, std::int64_t end,
                    std::uint32_t stream = 7) {
  return KernelRecord{.name = "gemm", .start_ns = start, .end_ns = end, .stream = stream,
                      .correlation = correlation, .device = 0};
}

MemcpyRecord copy(std::uint32_t correlation, std::int64_t start, std::int64_t end) {
  return MemcpyRecord{.kind = MemcpyKind::dtod, .bytes = 64, .start_ns = start, .end_ns = end,
                      .stream = 9, .correlation = correlation, .device = 0};
}

ExternalIdMap two_actions() {
  return {{1, ActionRef{Rank{0}, make_action(0, ActionKind::F, 0)}},
          {2, ActionRef{Rank{1}, make_action(1, ActionKind::SEND_B, 3)}}};
}

TEST(CuptiTimeline, ActionSpansItsKernelsAndCopiesExactly) {
  ActivityRecords r;
  // Action 1 launched three kernels (correlations 10, 11, 12) and one copy (13).
  r.external = {{1, 10}, {1, 11}, {1, 12}, {1, 13}, {2, 20}};
  r.kernels = {kernel(11, 1'500, 2'000), kernel(10, 1'000, 1'400), kernel(12, 2'100, 2'750)};
  r.memcpys = {copy(13, 2'700, 2'901), copy(20, 5'000, 5'333)};
  const GpuTimeline t = build_gpu_timeline(r, two_actions());

  ASSERT_EQ(t.actions.size(), 2u);
  EXPECT_EQ(t.actions[0].action, make_action(0, ActionKind::F, 0));
  EXPECT_EQ(t.actions[0].rank, Rank{0});
  EXPECT_EQ(t.actions[0].stream, Stream::compute);
  EXPECT_EQ(t.actions[0].start_ns, 1'000);  // earliest kernel start
  EXPECT_EQ(t.actions[0].end_ns, 2'901);    // latest end is the copy's
  EXPECT_EQ(t.actions[1].action, make_action(1, ActionKind::SEND_B, 3));
  EXPECT_EQ(t.actions[1].stream, Stream::send);
  EXPECT_EQ(t.actions[1].start_ns, 5'000);
  EXPECT_EQ(t.actions[1].end_ns, 5'333);
  EXPECT_EQ(t.unmatched_records, 0u);
  EXPECT_TRUE(t.actions_without_gpu_work.empty());
}

TEST(CuptiTimeline, OriginIsSubtracted) {
  ActivityRecords r;
  r.external = {{1, 10}};
  r.kernels = {kernel(10, 1'000'123, 1'000'456)};
  const GpuTimeline t = build_gpu_timeline(r, two_actions(), 1'000'000);
  ASSERT_EQ(t.actions.size(), 1u);
  EXPECT_EQ(t.actions[0].start_ns, 123);
  EXPECT_EQ(t.actions[0].end_ns, 456);
}

TEST(CuptiTimeline, UnmatchedUnknownAndDroppedAreCounted) {
  ActivityRecords r;
  r.external = {{1, 10}, {99, 30}};  // external id 99 is not an action of the map
  r.kernels = {kernel(10, 100, 200), kernel(77, 300, 400), kernel(30, 500, 600)};
  r.memcpys = {copy(78, 700, 800)};  // correlation 78: launched outside any action
  r.dropped = 5;
  const GpuTimeline t = build_gpu_timeline(r, two_actions());
  ASSERT_EQ(t.actions.size(), 1u);
  EXPECT_EQ(t.unmatched_records, 2u);
  EXPECT_EQ(t.unknown_external_records, 1u);
  EXPECT_EQ(t.dropped_records, 5u);
  EXPECT_EQ(t.actions_without_gpu_work, std::vector<std::uint64_t>{2});
}

TEST(CuptiTimeline, FirstCorrelationRecordWins) {
  ActivityRecords r;
  r.external = {{1, 10}, {2, 10}};
  const auto map = correlation_to_external(r);
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map.at(10), 1u);
}

TEST(CuptiTimeline, ActionsAreSortedByRankThenStart) {
  ActivityRecords r;
  const ExternalIdMap actions = {
      {1, ActionRef{Rank{1}, make_action(1, ActionKind::F, 0)}},
      {2, ActionRef{Rank{0}, make_action(0, ActionKind::F, 1)}},
      {3, ActionRef{Rank{0}, make_action(0, ActionKind::F, 0)}}};
  r.external = {{1, 1}, {2, 2}, {3, 3}};
  r.kernels = {kernel(1, 10, 20), kernel(2, 50, 60), kernel(3, 30, 40)};
  const GpuTimeline t = build_gpu_timeline(r, actions);
  ASSERT_EQ(t.actions.size(), 3u);
  EXPECT_EQ(t.actions[0].action, make_action(0, ActionKind::F, 0));
  EXPECT_EQ(t.actions[1].action, make_action(0, ActionKind::F, 1));
  EXPECT_EQ(t.actions[2].action, make_action(1, ActionKind::F, 0));
}

TEST(MockActivitySource, ReplaysRecordsAndTracksPushes) {
  MockActivitySource source;
  source.records.kernels = {kernel(10, 1, 2)};
  source.records.dropped = 3;
  EXPECT_THROW((void)source.stop(), RunError);
  source.start();
  EXPECT_THROW(source.start(), RunError);
  {
    ExternalIdScope outer(source, 7);
    ExternalIdScope inner(source, 8);
    EXPECT_EQ(source.depth(), 2u);
  }
  EXPECT_EQ(source.depth(), 0u);
  EXPECT_EQ(source.pushed(), (std::vector<std::uint64_t>{7, 8}));
  EXPECT_THROW((void)source.pop_external_id(), RunError);
  const ActivityRecords got = source.stop();
  EXPECT_EQ(got.kernels.size(), 1u);
  EXPECT_EQ(got.dropped, 3u);
  EXPECT_FALSE(source.started());
}

}  // namespace
}  // namespace gpipe::exec::cuda::cupti
