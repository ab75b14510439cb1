// One measured step as a Timeline, for every backend: measured intervals
// completed into every action of the lowered schedule (a SEND without its own
// takes its RECV's, a work-less action sits empty), and memory changes placed
// on the timeline's clock, at their host time or at their action's bounds.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.hpp"
#include "exec/runtime/step_timeline.hpp"
#include "schedules/generate.hpp"
#include "schedules/lower.hpp"

namespace gpipe::exec {
namespace {

using schedules::Action;
using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;
using timelines::Stream;

schedules::Schedule lowered_gpipe(int k, int m) {
  return schedules::lower(schedules::generate_gpipe({.num_ranks = k, .num_microbatches = m}));
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
      out[{Rank{r}, program[i]}] = Interval{start, start + 50};
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
      EXPECT_EQ(actions[k].stream, timelines::stream_of(a.kind));
      ++k;
    }
  }
}

TEST(StepTimeline, SendTakesTheIntervalOfItsReceive) {
  const auto s = lowered_gpipe(2, 2);
  MeasuredIntervals measured = measure_all(s);
  measured[{Rank{1}, make_action(1, ActionKind::RECV_F, 1)}] = Interval{777, 901};
  measured[{Rank{0}, make_action(0, ActionKind::RECV_B, 0)}] = Interval{5'000, 5'020};
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
  measured.erase({Rank{0}, step});
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
  measured.erase({Rank{1}, make_action(1, ActionKind::RECV_F, 0)});
  try {
    (void)complete_step_actions(s, measured);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 0: 0SEND_F0 has no measured copy to take its time from");
  }
  // Over NCCL the send is measured itself; the receive is still required.
  measured[{Rank{0}, make_action(0, ActionKind::SEND_F, 0)}] = Interval{10, 20};
  try {
    (void)complete_step_actions(s, measured);
    FAIL() << "no error";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "rank 1: the copy of 1RECV_F0 was not measured");
  }
}

TEST(StepTimeline, OnADeviceMemoryRisesAtAnActionsStartAndFallsAtItsEnd) {
  const auto s = lowered_gpipe(1, 2);  // program: F0 F1 B1 B0 STEP (indices 0..4)
  const auto actions = complete_step_actions(s, measure_all(s));
  const std::vector<MemoryChange> samples = {
      {0, 7, 100}, {0, 8, 300},  // F0 fills its stash: both at F0's start (0)
      {1, 9, 600},               // F1: at its start (100)
      {2, 10, 300},              // B1 frees: at its end (250)
      {3, 11, 0},                // B0 frees: at its end (350)
      {-1, 12, 0},               // between actions: at the previous action's end
  };
  const auto placed =
      place_memory_changes(Rank{0}, samples, MemoryPlacement::action_bounds, s, actions);
  ASSERT_EQ(placed.size(), samples.size());
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
      {0, 100}, {0, 300}, {100, 600}, {250, 300}, {350, 0}, {350, 0}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(placed[i].time_ns, expected[i].first) << i;
    EXPECT_EQ(placed[i].activation_bytes, expected[i].second) << i;
    EXPECT_EQ(placed[i].rank, Rank{0});
  }
}

TEST(StepTimeline, OnTheHostMemoryChangesStayAtTheirHostTime) {
  const auto s = lowered_gpipe(1, 2);
  const auto actions = complete_step_actions(s, measure_all(s));
  const std::vector<MemoryChange> changes = {{0, 7, 100}, {2, 260, 40}, {-1, 400, 0}};
  const auto placed = place_memory_changes(Rank{0}, changes, MemoryPlacement::host_time, s, actions);
  const std::vector<timelines::MemorySample> expected = {
      {Rank{0}, 7, 100}, {Rank{0}, 260, 40}, {Rank{0}, 400, 0}};
  EXPECT_EQ(placed, expected);
}

}  // namespace
}  // namespace gpipe::exec
