// Fault handling of the CPU executor: an error on one worker stops every
// worker and train() reports the rank and the action; a stalled pipeline is
// stopped by the watchdog with each rank's position; --check-finite turns a
// diverging run into an error. In every case train() returns only after all
// its threads have ended.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::parse_action;
using trainer_test::RunConfig;

// Threads of this process, from /proc (Linux), once the count holds still:
// a joined thread can stay in the kernel's list for a moment after its join
// returns, so one reading right after a run may still count it. A thread
// that really outlived the run never leaves, and still fails the test.
int thread_count() {
  const auto read = [] {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
      ++n;
    return n;
  };
  int count = read();
  for (int same = 0, reads = 0; same < 5 && reads < 2000; ++reads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int now = read();
    same = now == count ? same + 1 : 0;
    count = now;
  }
  return count;
}

std::string run_error(const TrainOptions& options) {
  try {
    (void)cpu::train(options);
  } catch (const RunError& e) {
    return e.what();
  }
  return "no RunError";
}

TrainOptions four_stages(const std::string& schedule, int steps = 2) {
  RunConfig c;
  c.schedule = schedule;
  c.stages = 4;
  c.microbatches = 4;
  c.batch = 8;
  c.steps = steps;
  return trainer_test::options_for(c);
}

TEST(TrainerFault, AFailureOnRankTwoNamesTheRankAndTheAction) {
  (void)cpu::train(four_stages("gpipe", 1));  // any thread pool the libraries keep exists from here on
  const int threads_before = thread_count();
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    TrainOptions o = four_stages(schedule);
    o.fault = FaultInjection{schedules::Rank{2}, parse_action("2F3")};
    EXPECT_EQ(run_error(o), "rank 2 failed in 2F3: injected fault") << schedule;
    o.fault = FaultInjection{schedules::Rank{2}, parse_action("2RECV_B1")};
    EXPECT_EQ(run_error(o), "rank 2 failed in 2RECV_B1: injected fault") << schedule;
    o.fault = FaultInjection{schedules::Rank{3}, parse_action("3STEP")};
    EXPECT_EQ(run_error(o), "rank 3 failed in 3STEP: injected fault") << schedule;
  }
  EXPECT_EQ(thread_count(), threads_before) << "a worker thread outlived cpu::train()";
}

TEST(TrainerFault, RunningOutOfMemoryEndsTheRunWithOneLineNotATerminate) {
  // The worker's handler must not allocate while memory is exhausted: an
  // injected std::bad_alloc takes the same path a failed allocation would.
  TrainOptions o = four_stages("1f1b");
  o.fault = FaultInjection{schedules::Rank{1}, parse_action("1B2"), FaultInjection::Kind::out_of_memory};
  EXPECT_EQ(run_error(o), "rank 1 ran out of memory in 1B2");
  o.fault = FaultInjection{schedules::Rank{3}, parse_action("3STEP"), FaultInjection::Kind::out_of_memory};
  EXPECT_EQ(run_error(o), "rank 3 ran out of memory in 3STEP");
}

TEST(TrainerFault, AStallIsStoppedByTheWatchdogNamingEachRank) {
  TrainOptions o = four_stages("gpipe");
  o.watchdog_seconds = 0.5;
  o.fault = FaultInjection{schedules::Rank{2}, parse_action("2F1"), FaultInjection::Kind::stall};
  const int threads_before = thread_count();
  const std::string message = run_error(o);
  EXPECT_EQ(message.rfind("stalled: no action finished for ", 0), 0U) << message;
  // Once rank 2 stops, rank 3 waits for 2F1's activation and ranks 0 and 1,
  // their forwards done, wait for their first gradient.
  EXPECT_NE(message.find(" s; rank 0 waits in 0RECV_B3, rank 1 waits in 1RECV_B3, "
                         "rank 2 in 2F1 (injected stall), rank 3 waits in 3RECV_F1"),
            std::string::npos)
      << message;
  EXPECT_EQ(thread_count(), threads_before);
}

TEST(TrainerFault, CheckFiniteStopsADivergingRun) {
  RunConfig c;
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  c.steps = 6;
  c.optimizer.kind = models::Optimizer::sgd;
  c.optimizer.learning_rate = 1e30F;
  TrainOptions o = trainer_test::options_for(c);
  // Without the check the run completes, with a loss that is not finite.
  const TrainResult unchecked = cpu::train(o);
  EXPECT_FALSE(std::isfinite(unchecked.losses.back()));
  o.check_finite = true;
  const std::string message = run_error(o);
  EXPECT_EQ(message.rfind("rank ", 0), 0U) << message;
  EXPECT_NE(message.find(": non-finite "), std::string::npos) << message;
}

TEST(TrainerFault, AnOnStepExceptionStopsTheRunAndReachesTheCaller) {
  TrainOptions o = four_stages("1f1b", 5);
  int calls = 0;
  o.on_step = [&](int step, double) {
    ++calls;
    if (step == 1) throw std::runtime_error("caller says stop");
  };
  std::string message = "no error";
  try {
    (void)cpu::train(o);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "caller says stop");
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace gpipe::exec
