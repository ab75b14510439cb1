// MPI for the processes of one run (Open MPI, from mpirun or srun): its
// lifetime, the tags the run's messages use, and the one way this code waits
// for a request. Every wait polls, so that an abort of this process (the
// watchdog, a failed rank here) or a failure another process announces
// ends it: MPI's own blocking calls could not be woken.
//
// Threads: MPI is initialised for MPI_THREAD_SERIALIZED. During a run only the
// rank's worker thread calls MPI; before and after, only the main thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <mpi.h>

namespace gpipe::exec::mpi {

// Tags below kFirstDataTag are the run's own; data tags start there.
enum ControlTag : int {
  kFailureTag = 1,     // a process's error line, to every other process
  kAckTag = 2,         // "your failure has been read"
  kPartsTag = 3,       // a rank's measured part, to the reporter
  kClockTag = 4,       // the clock ping-pong
  kProbeTag = 5,       // the link profiler's ping-pong
  kCompletionTag = 6,  // an inference item left the last stage: (item, ns), to stage 0
  kFirstDataTag = 16,
};

// MPI_Init_thread in the constructor, MPI_Finalize in the destructor; one per
// process. Throws RunError when MPI cannot start or gives less than
// serialized threading.
class MpiWorld {
 public:
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int max_tag() const { return max_tag_; }
  [[nodiscard]] const std::string& host() const { return host_; }
  // After a failure: no MPI_Finalize, which would wait for peers that may be gone.
  void skip_finalize() { finalize_ = false; }
  // Whether this node runs more processes of the launch than it has cores.
  [[nodiscard]] bool oversubscribed() const { return oversubscribed_; }

  // Polls `request` until it completes; every few tests calls `between`
  // (which throws to give up: Aborted, PeerFailed). Polls for 20 ms, then
  // sleeps in short steps so that a long wait gives its core back. While
  // polling, a process that has a core of its own spins (a message's latency
  // stays the link's; a yield costs tens of us to come back from); one that
  // shares a core yields to the others between polls.
  void wait(MPI_Request& request, const std::function<void()>& between) const;
  // An all-reduce of `count` values at `data`, in place, over `comm`,
  // started non-blocking and waited for as wait() does.
  void all_reduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  const std::function<void()>& between) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int max_tag_ = 32767;
  std::string host_;
  bool finalize_ = true;
  bool oversubscribed_ = false;
};

// Throws RunError naming `what` when an MPI call fails.
void check(int code, const char* what);

// The steady clock, in ns since its epoch: one time base for every process
// of a node (CLOCK_MONOTONIC).
[[nodiscard]] std::int64_t steady_now_ns();

}  // namespace gpipe::exec::mpi
