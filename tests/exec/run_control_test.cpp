// RunControl (exec/runtime/run_control.hpp), what a run's workers and its
// main thread share: the first error wins and aborts, abort hooks run once and
// outside the lock, every change wakes the main thread, losses are handed on
// in step order, and the ranks' positions read as the watchdog's message.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "exec/runtime/aborted.hpp"
#include "exec/runtime/run_control.hpp"
#include "schedules/action.hpp"

namespace gpipe::exec {
namespace {

using schedules::parse_action;
using schedules::Rank;
using std::chrono::seconds;

// How long a wait may take before the test calls it hung (a guard, not a measurement).
constexpr seconds kHangGuard{60};

TEST(RunControl, TheFirstErrorWinsAndAborts) {
  RunControl control(2);
  EXPECT_FALSE(control.aborted());
  EXPECT_EQ(control.error(), std::nullopt);
  EXPECT_NO_THROW(control.throw_if_aborted());
  control.fail("rank 1 failed in 1F0: out of memory");
  control.fail("rank 0 failed in 0RECV_B0: the link was closed");
  EXPECT_TRUE(control.aborted());
  EXPECT_EQ(control.error(), "rank 1 failed in 1F0: out of memory");
  EXPECT_THROW(control.throw_if_aborted(), Aborted);
}

TEST(RunControl, OfFailuresFromManyThreadsExactlyOneIsTheError) {
  constexpr int kThreads = 8;
  RunControl control(kThreads);
  std::atomic<int> hook_calls{0};
  control.add_abort_hook([&] { hook_calls.fetch_add(1); });
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { control.fail("failure " + std::to_string(i)); });
  }
  for (auto& t : threads) t.join();
  const std::string error = control.error().value_or("none");
  EXPECT_EQ(error.rfind("failure ", 0), 0U) << error;
  EXPECT_EQ(hook_calls.load(), 1);
}

TEST(RunControl, AbortHooksRunOnceInOrderOutsideTheLock) {
  RunControl control(1);
  std::vector<std::string> calls;
  // Each hook reads the control (and the second fails again): under the
  // control's lock either would deadlock.
  control.add_abort_hook([&] {
    calls.push_back("link: " + control.error().value_or("no error"));
    EXPECT_TRUE(control.aborted());
  });
  control.add_abort_hook([&] {
    control.fail("a failure while aborting");
    calls.push_back("barrier: " + control.error().value_or("no error"));
  });
  control.fail("rank 0 failed in 0F0: first");
  control.fail("rank 0 failed in 0F0: second");
  EXPECT_EQ(calls, (std::vector<std::string>{"link: rank 0 failed in 0F0: first",
                                             "barrier: rank 0 failed in 0F0: first"}));
  EXPECT_EQ(control.error(), "rank 0 failed in 0F0: first");
}

TEST(RunControl, AllExitedOnceEveryRankHasLeftCompletedOrNot) {
  RunControl control(3);
  EXPECT_FALSE(control.all_exited());
  control.exit_worker(Rank{0}, true);
  control.exit_worker(Rank{2}, false);
  EXPECT_FALSE(control.all_exited());
  control.exit_worker(Rank{1}, true);
  EXPECT_TRUE(control.all_exited());
  EXPECT_EQ(control.describe_ranks({{}, {}, {}}), "rank 0 has finished, rank 1 has finished, rank 2 has stopped");
  EXPECT_EQ(control.error(), std::nullopt);  // a worker that stops reports no error of its own
}

TEST(RunControl, LossesAreHandedOnOnlyAsALeadingRunOfFinishedSteps) {
  RunControl control(1);
  control.publish_loss(2, 0.25);
  EXPECT_EQ(control.losses(), std::vector<double>{});
  control.publish_loss(0, 1.5);
  EXPECT_EQ(control.losses(), std::vector<double>{1.5});
  control.publish_loss(1, 0.75);
  EXPECT_EQ(control.losses(), (std::vector<double>{1.5, 0.75, 0.25}));
}

TEST(RunControl, EveryLossExitAndAbortIsOneChange) {
  RunControl control(2);
  const auto now = RunControl::Clock::duration::zero();
  EXPECT_EQ(control.wait_for_change(0, now), 0U);  // nothing yet: the timeout
  control.publish_loss(0, 1.0);
  EXPECT_EQ(control.wait_for_change(0, now), 1U);
  control.exit_worker(Rank{0}, true);
  EXPECT_EQ(control.wait_for_change(1, now), 2U);
  // Positions and progress are not changes.
  control.enter_barrier(Rank{1}, 0);
  control.enter_action(Rank{1}, 0, 0);
  control.note_progress();
  EXPECT_EQ(control.wait_for_change(2, now), 2U);
  control.fail("stopped");
  control.fail("ignored: not the first");
  EXPECT_EQ(control.wait_for_change(2, now), 3U);
}

TEST(RunControl, WaitForChangeReturnsWhenAnotherThreadChangesSomething) {
  RunControl control(1);
  std::thread worker([&] { control.publish_loss(0, 2.0); });
  std::uint64_t seen = 0;
  // The hang guard only: the change wakes the wait.
  seen = control.wait_for_change(seen, kHangGuard);
  worker.join();
  EXPECT_EQ(seen, 1U);
  EXPECT_EQ(control.losses(), std::vector<double>{2.0});
}

TEST(RunControl, IdleSecondsCountFromTheLastProgress) {
  using Clock = RunControl::Clock;
  const auto seconds_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const Clock::time_point before_construction = Clock::now();
  RunControl control(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double idle = control.idle_seconds();
  // At least the sleep, at most since before construction (1 ns of rounding each way).
  EXPECT_GE(idle, 0.010 - 1e-9);
  EXPECT_LE(idle, seconds_between(before_construction, Clock::now()) + 1e-9);

  const Clock::time_point before_progress = Clock::now();
  control.note_progress();
  const double after = control.idle_seconds();
  const Clock::time_point read = Clock::now();
  EXPECT_GE(after, 0.0);
  EXPECT_LE(after, seconds_between(before_progress, read) + 1e-9);
}

TEST(RunControl, DescribeRanksNamesWhereEachRankIs) {
  const std::vector<std::vector<schedules::Action>> programs = {
      {parse_action("0F0"), parse_action("0SEND_F0")},
      {parse_action("1RECV_F0"), parse_action("1F0")},
      {parse_action("2RECV_B0"), parse_action("2B0"), parse_action("2STEP")},
      {parse_action("3F0"), parse_action("3F1")},
      {parse_action("4RECV_F0")},
      {parse_action("5STEP")},
  };
  RunControl control(6);
  EXPECT_EQ(control.describe_ranks(programs),
            "rank 0 has not started, rank 1 has not started, rank 2 has not started, "
            "rank 3 has not started, rank 4 has not started, rank 5 has not started");
  control.enter_barrier(Rank{0}, 2);
  control.enter_action(Rank{1}, 0, 0);
  control.enter_action(Rank{2}, 1, 1);
  control.enter_action(Rank{3}, 0, 1);
  control.enter_action(Rank{4}, 0, 0);
  control.exit_worker(Rank{5}, true);
  std::thread stalled([&] {
    EXPECT_THROW(control.stall(Rank{4}), Aborted);
  });
  const std::string expected =
      "rank 0 waits at the start of step 2, rank 1 waits in 1RECV_F0, rank 2 in 2B0, "
      "rank 3 in 3F1, rank 4 waits in 4RECV_F0 (injected stall), rank 5 has finished";
  // The stall is set on the other thread: poll (1 ms) until it shows, the hang guard at most.
  const auto deadline = RunControl::Clock::now() + kHangGuard;
  while (control.describe_ranks(programs) != expected && RunControl::Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(control.describe_ranks(programs), expected);
  EXPECT_EQ(control.error(), std::nullopt);  // a stall is no error: the watchdog's to report
  control.fail("stalled");
  stalled.join();
  control.exit_worker(Rank{4}, false);
  EXPECT_EQ(control.describe_ranks(programs),
            "rank 0 waits at the start of step 2, rank 1 waits in 1RECV_F0, rank 2 in 2B0, "
            "rank 3 in 3F1, rank 4 has stopped, rank 5 has finished");
}

TEST(RunControl, AStallAfterTheAbortThrowsAtOnce) {
  RunControl control(1);
  control.fail("stopped");
  EXPECT_THROW(control.stall(Rank{0}), Aborted);
}

}  // namespace
}  // namespace gpipe::exec
