// The step barrier (exec/runtime/step_barrier.hpp), where the ranks of one
// process meet before each step: every party leaves a generation with the same
// start, and only once all have arrived; generations follow one another; an
// abort wakes every waiter and every later arrival, which throw Aborted; and
// arrive(step), the StepSync seam the worker calls, is arrive_and_wait().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "exec/runtime/aborted.hpp"
#include "exec/runtime/step_barrier.hpp"

namespace gpipe::exec {
namespace {

TEST(StepBarrier, EveryPartyLeavesWithTheSameStart) {
  StepBarrier barrier(3);
  std::vector<StepBarrier::Clock::time_point> starts(6);
  std::vector<std::thread> threads;
  for (int p = 0; p < 3; ++p) {
    threads.emplace_back([&, p] {
      for (int step = 0; step < 2; ++step)
        starts[static_cast<std::size_t>(2 * p + step)] = barrier.arrive_and_wait();
    });
  }
  for (auto& t : threads) t.join();
  for (int p = 1; p < 3; ++p) {
    EXPECT_EQ(starts[static_cast<std::size_t>(2 * p)], starts[0]);
    EXPECT_EQ(starts[static_cast<std::size_t>(2 * p + 1)], starts[1]);
  }
  EXPECT_LE(starts[0], starts[1]);
}

TEST(StepBarrier, AbortWakesAWaiter) {
  StepBarrier barrier(2);
  bool aborted = false;
  std::thread waiter([&] {
    try {
      (void)barrier.arrive_and_wait();
    } catch (const Aborted&) {
      aborted = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  barrier.abort();
  waiter.join();
  EXPECT_TRUE(aborted);
  EXPECT_THROW((void)barrier.arrive_and_wait(), Aborted);
}

TEST(StepBarrier, GenerationsFollowOneAnotherAndNoPartyLeavesBeforeAllArrived) {
  constexpr int kParties = 4;
  constexpr int kGenerations = 50;
  StepBarrier barrier(kParties);
  std::vector<std::atomic<int>> arrived(kGenerations);
  // [party][generation]: how many had arrived when the party left; its start.
  std::vector<std::vector<int>> seen(kParties, std::vector<int>(kGenerations));
  std::vector<std::vector<StepBarrier::Clock::time_point>> starts(
      kParties, std::vector<StepBarrier::Clock::time_point>(kGenerations));
  std::vector<std::thread> threads;
  for (int p = 0; p < kParties; ++p) {
    threads.emplace_back([&, p] {
      for (int g = 0; g < kGenerations; ++g) {
        arrived[static_cast<std::size_t>(g)].fetch_add(1);
        starts[static_cast<std::size_t>(p)][static_cast<std::size_t>(g)] = barrier.arrive_and_wait();
        seen[static_cast<std::size_t>(p)][static_cast<std::size_t>(g)] = arrived[static_cast<std::size_t>(g)].load();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int p = 0; p < kParties; ++p) {
    for (int g = 0; g < kGenerations; ++g) {
      const auto pi = static_cast<std::size_t>(p);
      const auto gi = static_cast<std::size_t>(g);
      EXPECT_EQ(seen[pi][gi], kParties) << "party " << p << " generation " << g;
      EXPECT_EQ(starts[pi][gi], starts[0][gi]) << "party " << p << " generation " << g;
      if (g > 0) {
        EXPECT_LE(starts[pi][gi - 1], starts[pi][gi]) << "party " << p << " generation " << g;
      }
    }
  }
}

TEST(StepBarrier, OnePartyNeverWaits) {
  StepBarrier barrier(1);
  const auto first = barrier.arrive_and_wait();
  const auto second = barrier.arrive(1);
  EXPECT_LE(first, second);
}

TEST(StepBarrier, NeedsAtLeastOneParty) {
  try {
    StepBarrier barrier(0);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "a barrier needs at least one party");
  }
}

TEST(StepBarrier, AbortWakesEveryWaiterAndLaterArrivalsThrow) {
  constexpr int kWaiters = 3;
  StepBarrier barrier(kWaiters + 1);  // the last party never comes
  std::atomic<int> aborted{0};
  std::vector<std::thread> waiters;
  for (int w = 0; w < kWaiters; ++w) {
    waiters.emplace_back([&] {
      try {
        (void)barrier.arrive_and_wait();
      } catch (const Aborted&) {
        aborted.fetch_add(1);
      }
    });
  }
  // Gives the waiters time to block (one that has not sees the abort on entry).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  barrier.abort();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(aborted.load(), kWaiters);
  EXPECT_THROW((void)barrier.arrive_and_wait(), Aborted);
  EXPECT_THROW((void)barrier.arrive(3), Aborted);
  barrier.abort();  // idempotent
  EXPECT_THROW((void)barrier.arrive(4), Aborted);
}

TEST(StepBarrier, ArriveThroughTheStepSyncSeamIsArriveAndWait) {
  StepBarrier barrier(2);
  StepSync& sync = barrier;
  StepBarrier::Clock::time_point from_seam;
  std::thread rank1([&] { from_seam = sync.arrive(0); });
  const StepBarrier::Clock::time_point direct = barrier.arrive_and_wait();
  rank1.join();
  EXPECT_EQ(from_seam, direct);
  // Both calls count toward the same generation: the next one needs both again.
  std::thread again([&] { from_seam = sync.arrive(1); });
  const StepBarrier::Clock::time_point second = barrier.arrive_and_wait();
  again.join();
  EXPECT_EQ(from_seam, second);
  EXPECT_LE(direct, second);
}

}  // namespace
}  // namespace gpipe::exec
