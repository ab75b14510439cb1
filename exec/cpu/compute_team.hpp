// The threads one rank computes with (--threads-per-rank): the rank's own
// thread and size - 1 helpers. A rank's thread enters its team (Scope), and
// the kernels of exec/cpu/ops/ find it there (current()) and split their work
// over it: GEMMs by rows or columns, attention by sample and head, elementwise
// passes by ranges. So the layers are the same code at every team size, and a
// team of 1 (the default without the flag, and where no team is entered) runs
// every kernel on the calling thread alone.
//
// Every split is fixed by the shapes and the team's size, never by timing, and
// each output element is computed by one part, summing in the order it does
// alone (no kernel reduces over parts: LayerNorm's backward, whose gamma and
// beta gradients sum over rows, stays on one thread; a GEMM cuts its bands
// where OpenBLAS sums them as one thread does, exec/cpu/ops/gemm.cpp), so a
// team gives bit for bit what one thread gives
// (tests/exec/compute_team_test.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "exec/runtime/spin_wait.hpp"

namespace gpipe::exec::cpu {

class ComputeTeam {
 public:
  // size >= 1 threads in all, the caller of run() being one of them. Waiting
  // threads (helpers between jobs, the caller for its helpers) poll for `spin`
  // before they sleep (exec/runtime/spin_wait.hpp).
  explicit ComputeTeam(int size, SpinBudget spin = SpinBudget::zero());
  ~ComputeTeam();
  ComputeTeam(const ComputeTeam&) = delete;
  ComputeTeam& operator=(const ComputeTeam&) = delete;

  [[nodiscard]] int size() const { return size_; }

  // Runs body(part) for every part in [0, parts), spread over the team with
  // the calling thread taking parts too; returns when all have finished, and
  // rethrows the first exception a part threw. Not reentrant: a body must not
  // call run() of the same team (the kernels never nest).
  void run(int parts, const std::function<void(int part)>& body);

  // The team the calling thread has entered, or nullptr.
  [[nodiscard]] static ComputeTeam* current();
  // Enters `team` on this thread for the rest of the thread's life (a rank's
  // worker thread; the team must outlive it).
  static void enter_for_thread(ComputeTeam* team);

  // Enters `team` on this thread for the scope's lifetime (nullptr: none).
  class Scope {
   public:
    explicit Scope(ComputeTeam* team);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ComputeTeam* previous_;
  };

 private:
  void helper_loop();
  void take_parts(const std::function<void(int)>& body, int parts);

  int size_;
  SpinBudget spin_;
  std::mutex mutex_;
  std::condition_variable wake_;  // helpers: a new job, or stop
  std::condition_variable done_;  // the caller: every part finished
  const std::function<void(int)>* job_ = nullptr;
  int parts_ = 0;
  int next_part_ = 0;       // the next part not yet taken
  // Changed under mutex_; atomic so that waiters can poll them unlocked.
  std::atomic<int> unfinished_{0};    // parts not yet finished
  std::atomic<int> busy_helpers_{0};  // helpers inside a job (run() waits for them to leave it)
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::vector<std::thread> helpers_;
};

// The cores this process may run on (its CPU affinity: taskset, a cgroup's
// cpuset), at least 1.
[[nodiscard]] int usable_cores();

// --threads-per-rank's default: this process's cores shared by the ranks that
// run on them (`ranks_here`), at least 1 each.
[[nodiscard]] int default_threads_per_rank(int ranks_here);

// How long the waiting threads of a process poll before they sleep: long
// enough to cover a wait inside a step (20 ms) when the process's busy threads
// (`threads`: every rank's team) have a core each, else zero (polling would take
// the time of a thread that shares the core).
[[nodiscard]] SpinBudget polling_budget(int threads);

// The number of parts a kernel splits `work` units into on the current team:
// 1 without a team, or when each part would get less than `min_per_part`.
[[nodiscard]] int parts_for(std::int64_t work, std::int64_t min_per_part);

// Calls body(begin, end) over [0, count) split into `parts` contiguous ranges
// (as equal as they can be), on the current team; on the calling thread
// alone when parts <= 1 (directly: the common case of a kernel call on a rank
// of one thread builds no std::function).
void split_ranges(std::int64_t count, int parts, const std::function<void(std::int64_t, std::int64_t)>& body);
template <class Body>
void for_ranges(std::int64_t count, int parts, Body&& body) {
  if (parts <= 1 || count <= 1) {
    body(std::int64_t{0}, count);
    return;
  }
  split_ranges(count, parts, body);
}

// The elementwise passes' split: parts of at least 64 Ki elements (tens of
// microseconds; a helper's wake-up is worth no less).
inline constexpr std::int64_t kMinElementsPerPart = std::int64_t{1} << 16;

// for_ranges over [0, count) where each unit of count holds `width` elements
// (a row's width; 1 for a flat array), in parts of kMinElementsPerPart or more.
template <class Body>
void for_element_ranges(std::int64_t count, std::int64_t width, Body&& body) {
  for_ranges(count, parts_for(count * width, kMinElementsPerPart), std::forward<Body>(body));
}

}  // namespace gpipe::exec::cpu
