// What the workers of one run share besides their data: the first error (the
// one the run reports; later ones are consequences), the abort that wakes
// every blocking wait, each rank's current position for the watchdog's
// message, the time of the last progress, and the per-step losses the main
// thread hands to the caller. Everything here is guarded by one mutex or is
// atomic, so that workers and the main thread never race.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "schedules/action.hpp"
#include "schedules/ids.hpp"

namespace gpipe::exec {

class RunControl {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RunControl(int num_ranks);

  // Called by fail() once, outside the lock, to wake what waits elsewhere
  // (the link's receives, the step barrier). Register before the
  // workers start.
  void add_abort_hook(std::function<void()> hook);

  // Records `message` as the run's error if it is the first, and aborts.
  void fail(const std::string& message);
  // The same for a rank that ran out of memory (in `action`, or between
  // actions when null), without allocating: the message is written into
  // storage reserved at construction, and the hooks are called in place.
  void fail_out_of_memory(schedules::Rank rank, const schedules::Action* action) noexcept;
  [[nodiscard]] bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Throws Aborted when the run is aborted.
  void throw_if_aborted() const;
  [[nodiscard]] std::optional<std::string> error() const;
  // Blocks until the run is aborted, then throws Aborted (an injected stall).
  [[noreturn]] void stall(schedules::Rank rank);

  // A worker's position, for the watchdog's message.
  void enter_barrier(schedules::Rank rank, int step);
  void enter_action(schedules::Rank rank, int step, int index);
  // The worker has left: after its last step (`completed`) or on an error or abort.
  void exit_worker(schedules::Rank rank, bool completed);
  // `rank` runs in another process: it has no worker here, and the messages
  // leave it out. Before the workers start.
  void place_elsewhere(schedules::Rank rank);
  // Whether some rank runs in another process, and every rank here waits on
  // it: at a step's start or in a RECV. A stall then is most likely another
  // process's, whose watchdog names it; the supervisor gives it time first.
  [[nodiscard]] bool waits_on_other_processes(const std::vector<std::vector<schedules::Action>>& programs) const;
  // Something finished (an action, a step barrier): the run is not stalled.
  void note_progress();
  // Seconds since the last progress (or since construction).
  [[nodiscard]] double idle_seconds() const;

  // The loss of `step`, from the rank that holds the last stage.
  void publish_loss(int step, double loss);

  // For the main thread: waits up to `timeout` for a change (a loss, a worker
  // exit, the abort) after `seen`, and returns the new change count.
  [[nodiscard]] std::uint64_t wait_for_change(std::uint64_t seen, Clock::duration timeout);
  [[nodiscard]] std::vector<double> losses() const;
  [[nodiscard]] bool all_exited() const;
  // The first rank that left before its last step, "rank 1 (in step 2)";
  // nullopt when every worker completed. With no error, its wait was ended
  // from outside this process: a link closed by a failed peer process.
  [[nodiscard]] std::optional<std::string> stopped_rank() const;

  // "rank 0 waits in 0RECV_B3, rank 2 in 2F3 (injected stall), ..." from the
  // ranks' lowered programs.
  [[nodiscard]] std::string describe_ranks(
      const std::vector<std::vector<schedules::Action>>& programs) const;

 private:
  enum class Phase { not_started, barrier, action, stalled, completed, stopped, elsewhere };
  struct RankStatus {
    Phase phase = Phase::not_started;
    int step = 0;
    int index = 0;  // into the rank's program, in Phase::action / stalled
  };
  void changed();  // under mutex_: counts a change and wakes the main thread

  mutable std::mutex mutex_;
  std::condition_variable changed_cv_;
  std::uint64_t changes_ = 0;
  std::optional<std::string> error_;
  static constexpr std::size_t kOutOfMemoryCapacity = 128;
  std::string out_of_memory_;  // reserved at construction for fail_out_of_memory
  std::vector<std::function<void()>> hooks_;
  std::vector<RankStatus> ranks_;
  std::vector<std::optional<double>> losses_;
  std::atomic<bool> aborted_{false};
  std::atomic<std::int64_t> last_progress_ns_;
};

}  // namespace gpipe::exec
