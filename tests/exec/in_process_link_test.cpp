// The in-process link: messages match by (sender, tag) whatever order
// they come in, a receive waits for its message, abort wakes every waiter,
// and a message in flight is charged to no memory account.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "exec/cpu/in_process_link.hpp"
#include "exec/runtime/aborted.hpp"

namespace gpipe::exec {
namespace {

using schedules::Microbatch;
using schedules::Rank;

Tensor filled(float value, std::int64_t n = 3) {
  Tensor t({n});
  for (float& v : t.f32()) v = value;
  return t;
}

MessageTag activation(int microbatch, int step = 0) {
  return {step, MessageKind::activation, schedules::Stage{0}, Microbatch{microbatch}};
}

TEST(InProcessLink, ReceivesMatchByTagWhateverTheSendOrder) {
  cpu::InProcessLink link(2);
  for (int m : {2, 0, 3, 1})
    link.send(Rank{0}, Rank{1}, activation(m), filled(static_cast<float>(m)), {});
  link.send(Rank{0}, Rank{1}, {0, MessageKind::gradient, schedules::Stage{0}, Microbatch{1}}, filled(-1), {});
  EXPECT_EQ(link.pending(), 5U);
  for (int m : {1, 3, 0, 2}) {
    const Tensor t = link.receive(Rank{1}, Rank{0}, activation(m), {});
    EXPECT_EQ(t.f32()[0], static_cast<float>(m));
  }
  EXPECT_EQ(link.receive(Rank{1}, Rank{0}, {0, MessageKind::gradient, schedules::Stage{0}, Microbatch{1}}, {})
                .f32()[0],
            -1);
  EXPECT_EQ(link.pending(), 0U);
}

TEST(InProcessLink, TheSenderAndTheStepArePartOfTheMatch) {
  cpu::InProcessLink link(3);
  link.send(Rank{2}, Rank{1}, activation(0, 1), filled(21), {});
  link.send(Rank{0}, Rank{1}, activation(0, 1), filled(1), {});
  link.send(Rank{0}, Rank{1}, activation(0, 0), filled(0), {});
  EXPECT_EQ(link.receive(Rank{1}, Rank{0}, activation(0, 0), {}).f32()[0], 0);
  EXPECT_EQ(link.receive(Rank{1}, Rank{0}, activation(0, 1), {}).f32()[0], 1);
  EXPECT_EQ(link.receive(Rank{1}, Rank{2}, activation(0, 1), {}).f32()[0], 21);
}

TEST(InProcessLink, AReceiveWaitsForItsMessageFromAnotherThread) {
  cpu::InProcessLink link(2);
  std::vector<float> got;
  std::thread receiver([&] {
    for (int m = 0; m < 4; ++m)
      got.push_back(link.receive(Rank{1}, Rank{0}, activation(m), {}).f32()[0]);
  });
  for (int m : {3, 1, 2, 0})
    link.send(Rank{0}, Rank{1}, activation(m), filled(static_cast<float>(10 + m)), {});
  receiver.join();
  EXPECT_EQ(got, (std::vector<float>{10, 11, 12, 13}));
}

TEST(InProcessLink, AbortWakesABlockedReceive) {
  cpu::InProcessLink link(2);
  bool aborted = false;
  std::thread receiver([&] {
    try {
      (void)link.receive(Rank{1}, Rank{0}, activation(0), {});
    } catch (const Aborted&) {
      aborted = true;
    }
  });
  // Gives the receiver time to block (if it has not, it sees the abort on entry).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  link.abort();
  receiver.join();
  EXPECT_TRUE(aborted);
  EXPECT_THROW(link.send(Rank{0}, Rank{1}, activation(0), filled(0), {}), Aborted);
  EXPECT_THROW((void)link.receive(Rank{0}, Rank{1}, activation(0), {}), Aborted);
}

TEST(InProcessLink, AMessageInFlightIsChargedToNoOne) {
  MemoryAccount sender;
  cpu::InProcessLink link(2);
  Tensor t({4, 4}, ElementType::f32, &sender);
  EXPECT_EQ(sender.bytes(), 64);
  link.send(Rank{0}, Rank{1}, activation(0), std::move(t), {});
  EXPECT_EQ(sender.bytes(), 0);
  const Tensor received = link.receive(Rank{1}, Rank{0}, activation(0), {});
  EXPECT_EQ(received.account(), nullptr);
  EXPECT_EQ(received.bytes(), 64);
}

TEST(InProcessLink, ASecondSendOfOneMessageIsAnError) {
  cpu::InProcessLink link(2);
  link.send(Rank{0}, Rank{1}, activation(0), filled(0), {});
  EXPECT_THROW(link.send(Rank{0}, Rank{1}, activation(0), filled(0), {}), std::logic_error);
  EXPECT_THROW(link.send(Rank{0}, Rank{5}, activation(1), filled(0), {}), std::out_of_range);
}

// A receiver with a spin budget polls first, then sleeps: a message that comes
// while it polls, one that comes after it has gone to sleep, and one for
// another tag in between (which must not end its wait) all arrive; abort
// reaches it while it polls.
TEST(InProcessLink, APollingReceiverGetsItsMessageBeforeAndAfterItsBudget) {
  using namespace std::chrono_literals;
  cpu::InProcessLink link(2, nullptr, SpinBudget(20000));
  for (const auto delay : {2ms, 60ms}) {
    std::jthread sender([&] {
      std::this_thread::sleep_for(delay / 2);
      link.send(Rank{0}, Rank{1}, activation(9), filled(9), {});  // not the one awaited
      std::this_thread::sleep_for(delay / 2);
      link.send(Rank{0}, Rank{1}, activation(1), filled(1), {});
    });
    const Tensor t = link.receive(Rank{1}, Rank{0}, activation(1), {});
    EXPECT_EQ(t.f32()[0], 1.0F);
    sender.join();
    (void)link.receive(Rank{1}, Rank{0}, activation(9), {});
  }
  std::jthread stopper([&] {
    std::this_thread::sleep_for(2ms);
    link.abort();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW((void)link.receive(Rank{1}, Rank{0}, activation(2), {}), Aborted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace gpipe::exec
