// The simulator's event queue on its own, with exact integer times: events
// come out by (time, source), a source has at most one pending event and
// rescheduling moves it, cancelling removes it, and the clock follows the
// events it hands out. A reference model (a sorted list) checks a long seeded
// sequence of operations step by step.
#include "sim/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace gpipe::sim {
namespace {

// Takes every event out in order: (time, source) pairs.
std::vector<std::pair<std::int64_t, int>> drain_queue(EventQueue& queue) {
  std::vector<std::pair<std::int64_t, int>> out;
  while (!queue.finished()) {
    const EventQueue::Event e = queue.peek();
    out.emplace_back(e.time_ns, e.source);
    queue.cancel(e.source);
  }
  return out;
}

TEST(EventQueue, EventsComeOutByTimeThenSource) {
  EventQueue queue(5);
  queue.schedule(3, 40);
  queue.schedule(1, 10);
  queue.schedule(4, 10);
  queue.schedule(0, 25);
  queue.schedule(2, 10);
  const std::vector<std::pair<std::int64_t, int>> expected = {{10, 1}, {10, 2}, {10, 4}, {25, 0}, {40, 3}};
  EXPECT_EQ(drain_queue(queue), expected);
  EXPECT_EQ(queue.now(), 40);
}

TEST(EventQueue, RescheduleMovesTheSourcesOnlyEvent) {
  EventQueue queue(3);
  queue.schedule(0, 100);
  queue.schedule(1, 50);
  queue.schedule(2, 75);
  queue.schedule(0, 20);   // earlier: moves up
  queue.schedule(1, 200);  // later: moves down
  EXPECT_TRUE(queue.pending(0));
  EXPECT_EQ(queue.time_of(0), 20);
  EXPECT_EQ(queue.time_of(1), 200);
  const std::vector<std::pair<std::int64_t, int>> expected = {{20, 0}, {75, 2}, {200, 1}};
  EXPECT_EQ(drain_queue(queue), expected);
}

TEST(EventQueue, CancelRemovesAnEventFromAnywhereInTheHeap) {
  EventQueue queue(6);
  for (int s = 0; s < 6; ++s) queue.schedule(s, 10 * (6 - s));  // 60, 50, ..., 10
  queue.cancel(3);  // an inner node
  queue.cancel(5);  // the root
  queue.cancel(5);  // twice: nothing left to cancel
  EXPECT_FALSE(queue.pending(3));
  EXPECT_FALSE(queue.pending(5));
  const std::vector<std::pair<std::int64_t, int>> expected = {{20, 4}, {40, 2}, {50, 1}, {60, 0}};
  EXPECT_EQ(drain_queue(queue), expected);
}

TEST(EventQueue, PeekAdvancesTheClockAndLeavesTheEvent) {
  EventQueue queue(2);
  EXPECT_TRUE(queue.finished());
  EXPECT_EQ(queue.now(), 0);
  queue.schedule(1, 7);
  EXPECT_EQ(queue.peek().source, 1);
  EXPECT_EQ(queue.now(), 7);
  EXPECT_TRUE(queue.pending(1));  // still there until rescheduled or cancelled
  queue.schedule(1, 7);           // at the current time: allowed
  queue.schedule(0, 9);
  EXPECT_EQ(queue.peek().source, 1);
  queue.cancel(1);
  EXPECT_EQ(queue.peek().time_ns, 9);
  EXPECT_EQ(queue.now(), 9);
}

// A long seeded mix of schedules (never before now), reschedules, cancels
// and peeks agrees, operation by operation, with a map from source to time.
TEST(EventQueue, AgreesWithASortedReferenceOnASeededSequence) {
  constexpr int kSources = 17;
  EventQueue queue(kSources);
  std::map<int, std::int64_t> reference;  // source -> time
  std::mt19937_64 rng(2024);
  std::int64_t now = 0;
  for (int op = 0; op < 20'000; ++op) {
    const int source = static_cast<int>(rng() % kSources);
    switch (rng() % 4) {
      case 0:
      case 1: {
        const std::int64_t time = now + static_cast<std::int64_t>(rng() % 50);
        queue.schedule(source, time);
        reference[source] = time;
        break;
      }
      case 2:
        queue.cancel(source);
        reference.erase(source);
        break;
      default: {
        ASSERT_EQ(queue.finished(), reference.empty()) << "op " << op;
        if (reference.empty()) break;
        const auto best = std::min_element(reference.begin(), reference.end(), [](auto& a, auto& b) {
          return a.second != b.second ? a.second < b.second : a.first < b.first;
        });
        const EventQueue::Event e = queue.peek();
        ASSERT_EQ(e.source, best->first) << "op " << op;
        ASSERT_EQ(e.time_ns, best->second) << "op " << op;
        now = e.time_ns;
        ASSERT_EQ(queue.now(), now);
        break;
      }
    }
    for (const auto& [s, t] : reference) ASSERT_EQ(queue.time_of(s), t) << "op " << op;
  }
}

}  // namespace
}  // namespace gpipe::sim
