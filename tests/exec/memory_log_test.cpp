// MemoryLog (exec/runtime/memory_log.hpp), one rank's activation memory over
// the measured steps: it logs only once a step is started, each change with
// the action the worker was at and its host time since the step's start, one
// list per started step. Then with the worker (tests/exec/fake_backend.hpp):
// only the measured steps are logged, each change at the index of the action
// that made it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "exec/layers/memory_account.hpp"
#include "exec/runtime/memory_log.hpp"
#include "tests/exec/fake_backend.hpp"

namespace gpipe::exec {
namespace {

using Clock = MemoryLog::Clock;

std::int64_t to_ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

// (action index, bytes) of each change: what is exact.
std::vector<std::pair<int, std::int64_t>> actions_and_bytes(const std::vector<MemoryChange>& changes) {
  std::vector<std::pair<int, std::int64_t>> out;
  for (const MemoryChange& c : changes) out.emplace_back(c.action_index, c.bytes);
  return out;
}

TEST(MemoryLog, LogsOnlyOnceAStepIsStartedWithTheActionAndTheTimeSinceItsStart) {
  MemoryLog log(schedules::Rank{3});
  EXPECT_EQ(log.rank(), schedules::Rank{3});
  log.set_action(0);
  log.record(64);  // before any started step: not logged
  EXPECT_EQ(log.changes(0), std::vector<MemoryChange>{});

  const Clock::time_point start = Clock::now();
  log.start_step(start);
  log.set_action(2);
  const Clock::time_point before = Clock::now();
  log.record(128);
  const Clock::time_point after = Clock::now();
  log.set_action(-1);
  log.record(0);
  const std::vector<MemoryChange> changes = log.changes(0);
  ASSERT_EQ(changes.size(), 2U);
  EXPECT_EQ(actions_and_bytes(changes), (std::vector<std::pair<int, std::int64_t>>{{2, 128}, {-1, 0}}));
  EXPECT_GE(changes[0].host_ns, to_ns(before - start));
  EXPECT_LE(changes[0].host_ns, to_ns(after - start));
  EXPECT_GE(changes[1].host_ns, changes[0].host_ns);
}

TEST(MemoryLog, EachStartedStepHasItsOwnList) {
  MemoryLog log(schedules::Rank{0});
  log.start_step(Clock::now());
  log.set_action(1);
  log.record(10);
  const Clock::time_point second = Clock::now();
  log.start_step(second);
  log.set_action(4);
  log.record(30);
  log.record(20);
  EXPECT_EQ(actions_and_bytes(log.changes(0)), (std::vector<std::pair<int, std::int64_t>>{{1, 10}}));
  EXPECT_EQ(actions_and_bytes(log.changes(1)), (std::vector<std::pair<int, std::int64_t>>{{4, 30}, {4, 20}}));
  EXPECT_EQ(log.changes(2), std::vector<MemoryChange>{});  // never started
  EXPECT_GE(log.changes(1).at(0).host_ns, 0);
}

TEST(MemoryLog, AsAnAccountsObserverItLogsEveryNewTotal) {
  MemoryLog log(schedules::Rank{0});
  MemoryAccount account;
  account.set_observer([&](std::int64_t bytes) { log.record(bytes); });
  account.charge(100);  // not started yet
  log.start_step(Clock::now());
  log.set_action(5);
  account.charge(50);
  account.refund(120);
  EXPECT_EQ(actions_and_bytes(log.changes(0)), (std::vector<std::pair<int, std::int64_t>>{{5, 150}, {5, 30}}));
}

TEST(MemoryLog, TheWorkerLogsTheMeasuredStepsAtTheIndexOfEachAction) {
  // gpipe K = 2, M = 1, recompute always; 3 steps, the last 2 measured.
  // Rank 0 runs 0F0 0SEND_F0 0R0 0RECV_B0 0B0 0STEP: F stashes 100 bytes and
  // drops to 10 within F (index 0), R rebuilds 100 (index 2), B frees (index 4).
  TrainOptions o = fake::options("gpipe", 2, 1, 2, schedules::RecomputePolicy::stage);
  o.steps = 3;
  o.measured_steps = 2;
  fake::WorkerHarness h(std::move(o));
  h.run();
  ASSERT_EQ(h.error(), "no error");
  using Changes = std::vector<std::pair<int, std::int64_t>>;
  for (const std::size_t slot : {0U, 1U}) {
    EXPECT_EQ(actions_and_bytes(h.memory(0).changes(slot)), (Changes{{0, 100}, {0, 10}, {2, 100}, {4, 0}}));
    // Rank 1: 1RECV_F0 1F0 1R0 1B0 1SEND_B0 1STEP, stage 1 stashes 200 and keeps 20.
    EXPECT_EQ(actions_and_bytes(h.memory(1).changes(slot)), (Changes{{1, 200}, {1, 20}, {2, 200}, {3, 0}}));
  }
  EXPECT_EQ(h.memory(0).changes(2), std::vector<MemoryChange>{});
}

}  // namespace
}  // namespace gpipe::exec
