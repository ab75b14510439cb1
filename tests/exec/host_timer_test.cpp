// HostTimer (exec/runtime/host_timer.hpp), the action timer of backends that
// compute on the rank's thread: each interval in ns from its rank's step
// origin, kept per measured slot and keyed by (rank, action); starts strictly
// increase on a rank even when the clock does not move (1 ns added on a
// tie), and an end is never before its start. An origin in the future makes
// the clock stand still before it, so those rules give exact values.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exec/runtime/host_timer.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec {
namespace {

using Clock = ActionTimer::Clock;
using schedules::Action;
using schedules::parse_action;
using schedules::Rank;

ActionMark mark(int rank, int slot, std::size_t index, const char* action) {
  return {Rank{rank}, slot, index, parse_action(action)};
}

void time(HostTimer& timer, const ActionMark& m) {
  timer.begin(m);
  timer.end(m);
}

std::int64_t ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

TEST(HostTimer, AnIntervalIsInNanosecondsFromItsRanksStepOrigin) {
  HostTimer timer(1, 1);
  const Clock::time_point origin = Clock::now() - std::chrono::seconds(5);
  timer.start_step(Rank{0}, 0, origin);
  const Clock::time_point before = Clock::now();
  timer.begin(mark(0, 0, 0, "0F0"));
  const Clock::time_point between = Clock::now();
  timer.end(mark(0, 0, 0, "0F0"));
  const Clock::time_point after = Clock::now();
  const MeasuredIntervals intervals = timer.intervals(0);
  ASSERT_EQ(intervals.size(), 1U);
  const Interval i = intervals.at({Rank{0}, parse_action("0F0")});
  EXPECT_GE(i.start_ns, ns(before - origin));
  EXPECT_LE(i.start_ns, ns(between - origin));
  EXPECT_GE(i.end_ns, ns(between - origin));
  EXPECT_LE(i.end_ns, ns(after - origin));
  EXPECT_GE(i.start_ns, 5'000'000'000);
}

TEST(HostTimer, StartsStrictlyIncreaseOnAClockTieAndAnEndIsNeverBeforeItsStart) {
  HostTimer timer(1, 1);
  // Before its origin the clock reads negative: every reading is a tie with the last.
  timer.start_step(Rank{0}, 0, Clock::now() + std::chrono::hours(1));
  time(timer, mark(0, 0, 0, "0F0"));
  time(timer, mark(0, 0, 1, "0F1"));
  time(timer, mark(0, 0, 3, "0B1"));
  time(timer, mark(0, 0, 4, "0STEP"));
  const MeasuredIntervals expected = {
      {{Rank{0}, parse_action("0F0")}, {0, 0}},
      {{Rank{0}, parse_action("0F1")}, {1, 1}},
      {{Rank{0}, parse_action("0B1")}, {2, 2}},
      {{Rank{0}, parse_action("0STEP")}, {3, 3}},
  };
  EXPECT_EQ(timer.intervals(0), expected);
}

TEST(HostTimer, ANewStepStartsItsCountFromTheNewOrigin) {
  HostTimer timer(1, 2);
  timer.start_step(Rank{0}, 0, Clock::now() + std::chrono::hours(1));
  time(timer, mark(0, 0, 0, "0F0"));
  time(timer, mark(0, 0, 1, "0B0"));
  timer.start_step(Rank{0}, 1, Clock::now() + std::chrono::hours(1));
  time(timer, mark(0, 1, 0, "0F0"));
  EXPECT_EQ(timer.intervals(0), (MeasuredIntervals{{{Rank{0}, parse_action("0F0")}, {0, 0}},
                                                   {{Rank{0}, parse_action("0B0")}, {1, 1}}}));
  EXPECT_EQ(timer.intervals(1), (MeasuredIntervals{{{Rank{0}, parse_action("0F0")}, {0, 0}}}));
}

TEST(HostTimer, SlotsAndRanksAreKeptApartWithExactKeys) {
  HostTimer timer(3, 2);
  const Clock::time_point future = Clock::now() + std::chrono::hours(1);
  timer.start_step(Rank{0}, 0, future);
  timer.start_step(Rank{2}, 0, future);
  time(timer, mark(0, 0, 0, "0F0"));
  time(timer, mark(2, 0, 1, "2F0"));  // its own rank's count: from 0
  time(timer, mark(0, 0, 2, "0SEND_F0"));
  time(timer, mark(2, 0, 3, "2B0"));
  timer.start_step(Rank{0}, 1, future);
  time(timer, mark(0, 1, 0, "0F0"));
  std::vector<std::pair<int, std::string>> keys;
  for (const auto& [key, interval] : timer.intervals(0)) keys.emplace_back(key.first.value, to_string(key.second));
  EXPECT_EQ(keys, (std::vector<std::pair<int, std::string>>{{0, "0F0"}, {0, "0SEND_F0"}, {2, "2F0"}, {2, "2B0"}}));
  EXPECT_EQ(timer.intervals(0).at({Rank{2}, parse_action("2B0")}), (Interval{1, 1}));
  EXPECT_EQ(timer.intervals(1), (MeasuredIntervals{{{Rank{0}, parse_action("0F0")}, {0, 0}}}));
}

TEST(HostTimer, ASecondStartOfASlotReplacesWhatItHeld) {
  HostTimer timer(1, 1);
  const Clock::time_point future = Clock::now() + std::chrono::hours(1);
  timer.start_step(Rank{0}, 0, future);
  time(timer, mark(0, 0, 0, "0F0"));
  time(timer, mark(0, 0, 1, "0F1"));
  timer.start_step(Rank{0}, 0, future);
  time(timer, mark(0, 0, 1, "0F1"));
  EXPECT_EQ(timer.intervals(0), (MeasuredIntervals{{{Rank{0}, parse_action("0F1")}, {0, 0}}}));
}

TEST(HostTimer, EachRanksThreadRecordsOnItsOwn) {
  constexpr int kRanks = 4;
  constexpr int kActions = 200;
  HostTimer timer(kRanks, 1);
  const Clock::time_point future = Clock::now() + std::chrono::hours(1);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      timer.start_step(Rank{r}, 0, future);
      for (int m = 0; m < kActions; ++m) {
        time(timer, {Rank{r}, 0, static_cast<std::size_t>(m), schedules::make_action(r, schedules::ActionKind::F, m)});
      }
    });
  }
  for (auto& t : threads) t.join();
  const MeasuredIntervals intervals = timer.intervals(0);
  EXPECT_EQ(intervals.size(), static_cast<std::size_t>(kRanks * kActions));
  for (int r = 0; r < kRanks; ++r) {
    for (int m = 0; m < kActions; ++m) {
      EXPECT_EQ(intervals.at({Rank{r}, schedules::make_action(r, schedules::ActionKind::F, m)}), (Interval{m, m}));
    }
  }
}

constexpr timelines::CollectiveGroup kTensor = timelines::CollectiveGroup::tensor;
constexpr timelines::CollectiveGroup kContext = timelines::CollectiveGroup::context;

TEST(HostTimer, ACollectiveIsFiledUnderTheActionOpenOnItsRank) {
  HostTimer timer(2, 1);
  const Clock::time_point origin = Clock::now();
  timer.start_step(Rank{1}, 0, origin);
  const auto after = [&](int us) { return origin + std::chrono::microseconds(us); };
  timer.record_collective(Rank{1}, kTensor, "all-reduce", 64, after(1), after(2));  // no action open: not kept
  timer.begin(mark(1, 0, 0, "1F0"));
  timer.record_collective(Rank{1}, kTensor, "all-reduce", 64, after(3), after(5));
  timer.record_collective(Rank{1}, kContext, "all-gather", 32, after(5), after(6));  // its group kept
  timer.record_collective(Rank{1}, kTensor, "all-reduce", 128, after(7), after(6));  // an end before its start: empty
  timer.end(mark(1, 0, 0, "1F0"));
  timer.record_collective(Rank{1}, kTensor, "all-reduce", 64, after(9), after(10));  // after the end: not kept
  EXPECT_EQ(timer.collectives(0),
            (std::vector<timelines::CollectiveSpan>{
                {Rank{1}, parse_action("1F0"), "all-reduce", 64, 3'000, 5'000, kTensor},
                {Rank{1}, parse_action("1F0"), "all-gather", 32, 5'000, 6'000, kContext},
                {Rank{1}, parse_action("1F0"), "all-reduce", 128, 7'000, 7'000, kTensor}}));
  timer.start_step(Rank{1}, 0, origin);  // a new start of the slot forgets them
  EXPECT_TRUE(timer.collectives(0).empty());
}

TEST(HostTimer, ARankOutOfRangeIsNamed) {
  HostTimer timer(2, 1);
  EXPECT_STREQ(timer.name(), "host");
  try {
    timer.begin(mark(5, 0, 0, "5F0"));
    FAIL() << "no error";
  } catch (const std::out_of_range& e) {
    EXPECT_EQ(std::string(e.what()), "host timer: no rank 5");
  }
}

}  // namespace
}  // namespace gpipe::exec
