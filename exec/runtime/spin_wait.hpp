// Waiting by polling, for a while, before sleeping. A thread that blocks on a
// condition variable sleeps, and waking it is slow where it matters most: on
// this project's 2-core VM a hand-off to a sleeping rank took 50-120 us
// (`gpipe-run validate`'s link line: 480 transfers, 49-118 us measured
// against 2-18 us predicted from a ping-pong between two awake threads), a
// few percent of a 10 ms step at every transfer on the critical path. A waiter
// that has a core of its own polls instead, yielding at each poll so that it
// takes no time from a runnable thread, and blocks only past its budget.
// MPI and NCCL poll for the same reason.
#pragma once

#include <chrono>
#include <thread>

namespace gpipe::exec {

// How long a waiter polls before it blocks; zero: it blocks at once (a thread
// that shares its core with others, where polling would take their time).
using SpinBudget = std::chrono::microseconds;

// Polls `ready` (yielding between polls) until it is true or `budget` has
// passed; returns its last value.
template <class Ready>
bool spin_until(Ready&& ready, SpinBudget budget) {
  if (ready()) return true;
  if (budget.count() <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  while (true) {
    std::this_thread::yield();
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace gpipe::exec
