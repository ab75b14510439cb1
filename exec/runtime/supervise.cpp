#include "exec/runtime/supervise.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/runtime/termination.hpp"

namespace gpipe::exec {

namespace {

// The main thread's part while the workers run: hands each finished step's
// loss to on_step, and stops the run when no action has finished for the
// watchdog's time. Returns once every worker has left.
std::exception_ptr supervise(const TrainOptions& o, RunControl& control,
                             const schedules::Schedule& lowered) {
  using namespace std::chrono;
  const auto watchdog = duration<double>(o.watchdog_seconds);
  const auto poll =
      duration_cast<RunControl::Clock::duration>(std::min(duration<double>(0.05), watchdog / 5));
  std::exception_ptr callback_error;
  std::size_t reported = 0;
  std::uint64_t seen = 0;
  while (true) {
    seen = control.wait_for_change(seen, poll);
    // Read before the losses: a worker publishes its last loss before it
    // exits, so once all have exited every loss is there to hand on.
    const bool exited = control.all_exited();
    if (o.on_step && !callback_error) {
      const std::vector<double> losses = control.losses();
      try {
        for (; reported < losses.size(); ++reported)
          o.on_step(static_cast<int>(reported), losses[reported]);
      } catch (...) {
        callback_error = std::current_exception();
        control.fail("the on_step callback failed");
      }
    }
    if (exited) return callback_error;
    if (const int signal = termination_signal(); signal != 0 && !control.aborted()) {
      control.fail(fmt::format("stopped by {} from outside (a launcher ends every process of a job once one "
                               "has ended); {}",
                               signal == SIGTERM ? "SIGTERM" : "SIGINT", control.describe_ranks(lowered.ranks)));
    }
    const double idle = control.idle_seconds();
    // Ranks that wait on another process give that process's watchdog, which
    // names the rank that stalled, time to speak first.
    const double grace =
        control.waits_on_other_processes(lowered.ranks) ? std::max(1.0, 0.5 * o.watchdog_seconds) : 0.0;
    if (!control.aborted() && idle > o.watchdog_seconds + grace) {
      control.fail(fmt::format("stalled: no action finished for {:.1f} s; {}", idle,
                               control.describe_ranks(lowered.ranks)));
    }
  }
}

}  // namespace

void run_supervised(const TrainOptions& o, RunControl& control, const schedules::Schedule& lowered,
                    std::vector<std::function<void()>> bodies) {
  // However this function leaves, no worker outlives it: an early exit (an
  // exception on this thread) aborts the run and joins every started thread.
  std::vector<std::thread> threads;
  struct JoinAll {
    RunControl& control;
    std::vector<std::thread>& threads;
    ~JoinAll() {
      if (threads.empty() || !threads.front().joinable()) return;
      control.fail("the run was stopped: train() itself failed");
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_all{control, threads};
  threads.reserve(bodies.size());
  for (auto& body : bodies) threads.emplace_back(std::move(body));
  const std::exception_ptr callback_error = supervise(o, control, lowered);
  for (auto& t : threads) t.join();

  if (callback_error) std::rethrow_exception(callback_error);
  if (auto error = control.error()) throw RunError(*error);
  if (auto stopped = control.stopped_rank()) {
    throw RunError(fmt::format("{} stopped with no error of this process: its link was closed from "
                               "outside (a peer process failed?)",
                               *stopped));
  }
}

}  // namespace gpipe::exec
