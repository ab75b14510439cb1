// The CUDA executor's measured step, built on the host: GPU intervals
// completed into every action of the lowered schedule (SENDs take their
// RECV's interval, work-less actions sit empty), memory samples placed on the
// GPU clock, and the CUPTI timer's ids and intervals, all with mocked records.
#include <gtest/gtest.h>

#include <algorithm>

#include "exec/cuda/cupti/mock_activity_source.hpp"
#include "exec/cuda/backend/cupti_action_timer.hpp"
#include "exec/cuda/backend/step_timeline.hpp"
#include "schedules/error.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"
#include "schedules/metrics.hpp"

namespace gpipe::exec::cuda {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;
using schedules::Stream;

schedules::Schedule lowered_gpipe(int k, int m) {
  return schedules::lower(schedules::generate_gpipe({.num_stages = k, .num_microbatches = m}));
}

// Every compute action and RECV of `s` measured: action i of rank r at
// [1000 r + 100 i, 1000 r + 100 i + 50).
MeasuredIntervals measure_all(const schedules::Schedule& s) {
  MeasuredIntervals out;
  for (int r = 0; r < s.num_ranks; ++r) {
    const auto& program = s.actions(Rank{r});
    for (std::size_t i = 0; i < program.size(); ++i) {
      const ActionKind kind = program[i].kind;
      if (kind == ActionKind::SEND_F || kind == ActionKind::SEND_B) continue;
      const std::int64_t start = 1000 * r + 100 * static_cast<std::int64_t>(i);
      out[{r, program[i]}] = GpuInterval{start, start + 50};
    }
  }
  return out;
}

TEST(StepTimeline, EveryActionInProgramOrderOnItsStream) {
  const auto s = lowered_gpipe(2, 2);
  const auto actions = complete_step_actions(s, measure_all(s));
  std::size_t total = 0;
  for (const auto& list : s.ranks) total += list.size();
  ASSERT_EQ(actions.size(), total);
  std::size_t k = 0;
  for (int r = 0; r < s.num_ranks; ++r) {
    for (const Action& a : s.actions(Rank{r})) {
      EXPECT_EQ(actions[k].action, a);
      EXPECT_EQ(actions[k].rank, Rank{r});
      EXPECT_EQ(actions[k].stream, schedules::stream_of(a.kind));
      ++k;
    }
  }
}

TEST(StepTimeline, SendTakesTheIntervalOfItsReceive) {
  const auto s = lowered_gpipe(2, 2);
  MeasuredIntervals measured = measure_all(s);
  measured[{1, make_action(1, ActionKind::RECV_F, 1)}] = GpuInterval{777, 901};
  measured[{0, make_action(0, ActionKind::RECV_B, 0)}] = GpuInterval{5'000, 5'020};
  const auto actions = complete_step_actions(s, measured);
  const auto find = [&](int rank, const Action& a) {
    return *std::ranges::find_if(actions, [&](const auto& t) { return t.rank.value == rank && t.action == a; });
  };
  const auto send_f = find(0, make_action(0, ActionKind::SEND_F, 1));
  EXPECT_EQ(send_f.start_ns, 777);
  EXPECT_EQ(send_f.end_ns, 901);
  EXPECT_EQ(send_f.stream, Stream::send);
  const auto send_b = find(1, make_action(1, ActionKind::SEND_B, 0));
  EXPECT_EQ(send_b.start_ns, 5'000);
  EXPECT_EQ(send_b.end_ns, 5'020);
}

TEST(StepTimeline, AnActionWithoutGpuWorkSitsEmptyWhereItsStreamLastEnded) {
  const auto s = lowered_gpipe(1, 2);  // F0 F1 B1 B0 STEP on one rank
  MeasuredIntervals measured = measure_all(s);
  const Action step = make_action(0, ActionKind::STEP, 0);
  measured.erase({0, step});
  const auto actions = complete_step_actions(s, measured);
  const auto it = std::ranges::find_if(actions, [&](const auto& t) { return t.action == step; });
  ASSERT_NE(it, actions.end());
  // The latest compute end before it: the last B's, at 100 * 3 + 50.
  EXPECT_EQ(it->start_ns, 350);
  EXPECT_EQ(it->end_ns, 350);
}

TEST(StepTimeline, AReceiveWithoutItsCopyIsARunError) {
  const auto s = lowered_gpipe(2, 1);
  MeasuredIntervals measured = measure_all(s);
  measured.erase({1, make_action(1, ActionKind::RECV_F, 0)});
  try {
    (void)complete_step_actions(s, measured);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 0: 0SEND_F0 has no measured copy to take its time from");
  }
  // Over NCCL the send is measured itself; the receive is still required.
  measured[{0, make_action(0, ActionKind::SEND_F, 0)}] = GpuInterval{10, 20};
  try {
    (void)complete_step_actions(s, measured);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 1: the copy of 1RECV_F0 was not measured");
  }
}

TEST(StepTimeline, MemoryRisesAtAnActionsStartAndFallsAtItsEnd) {
  const auto s = lowered_gpipe(1, 2);  // program: F0 F1 B1 B0 STEP (indices 0..4)
  const auto actions = complete_step_actions(s, measure_all(s));
  const std::vector<ActionMemorySample> samples = {
      {0, 0, 100}, {0, 0, 300},  // F0 fills its stash: both at F0's start (0)
      {0, 1, 600},               // F1: at its start (100)
      {0, 2, 300},               // B1 frees: at its end (250)
      {0, 3, 0},                 // B0 frees: at its end (350)
      {0, -1, 0},                // between actions: at the previous action's end
  };
  const auto placed = place_memory_samples(samples, s, actions);
  ASSERT_EQ(placed.size(), samples.size());
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
      {0, 100}, {0, 300}, {100, 600}, {250, 300}, {350, 0}, {350, 0}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(placed[i].time_ns, expected[i].first) << i;
    EXPECT_EQ(placed[i].activation_bytes, expected[i].second) << i;
    EXPECT_EQ(placed[i].rank, Rank{0});
  }
}

TEST(CuptiActionTimer, PushesOneIdPerActionAndBuildsIntervalsFromItsRecords) {
  cupti::MockActivitySource source;
  source.start();
  std::int64_t clock = 10'000;
  CuptiActionTimer timer(source, [&] { return clock; }, 2);
  const StreamHandle stream = nullptr;  // the CUPTI timer reads no stream
  const Action f = make_action(0, ActionKind::F, 0);
  const Action b = make_action(0, ActionKind::B, 0);

  timer.start_step(1, 1, stream);  // rank 1 leaves the barrier later
  clock = 9'000;
  timer.start_step(0, 1, stream);  // the origin is the earliest: 9000
  timer.begin(0, 1, 0, f, stream);
  timer.end(0, 1, 0, f, stream);
  timer.begin(0, 1, 1, b, stream);
  timer.end(0, 1, 1, b, stream);
  EXPECT_EQ(source.depth(), 0u);
  const std::uint64_t id_f = CuptiActionTimer::external_id(0, 1, 0);
  const std::uint64_t id_b = CuptiActionTimer::external_id(0, 1, 1);
  EXPECT_EQ(id_f, 1'000'000'001u);
  EXPECT_EQ(source.pushed(), (std::vector<std::uint64_t>{id_f, id_b}));

  source.records.external = {{id_f, 5}, {id_b, 6}, {42, 7}};
  source.records.kernels = {{"f", 9'500, 9'900, 1, 5, 0}, {"b", 10'000, 10'700, 1, 6, 0},
                            {"warmup", 100, 200, 1, 7, 0}};
  timer.finish();
  const MeasuredIntervals intervals = timer.intervals(1);
  ASSERT_EQ(intervals.size(), 2u);
  EXPECT_EQ(intervals.at({0, f}), (GpuInterval{500, 900}));
  EXPECT_EQ(intervals.at({0, b}), (GpuInterval{1'000, 1'700}));
  EXPECT_EQ(timer.origin_ns(1), 9'000);

  // Only the step's own work is kept for the trace.
  const cupti::ActivityRecords kept = records_of(timer.records(), timer.ids(1));
  ASSERT_EQ(kept.kernels.size(), 2u);
  EXPECT_EQ(kept.kernels[0].name, "f");
  EXPECT_EQ(kept.external.size(), 2u);
}

}  // namespace
}  // namespace gpipe::exec::cuda
