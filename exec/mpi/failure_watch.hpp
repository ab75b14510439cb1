// How the processes of an MPI run learn that one of them failed. The failed
// process sends its error line ("rank 1 failed in 1F3: ...") to every other
// process and waits, a bounded time, for each to acknowledge it; every wait
// of the others (a receive, the step barrier, the gathering of parts) checks
// for such a line between its polls, and ends with PeerFailed carrying it.
// So each process reports the failed rank and action, and exits, before the
// launcher notices the first exit and ends the job.
//
// A process killed from outside (SIGKILL) says nothing: the launcher ends
// the others (mpirun sends SIGTERM, see exec/runtime/termination.hpp), or
// their watchdog does.
#pragma once

#include <atomic>
#include <string>

#include "exec/mpi/mpi_world.hpp"

namespace gpipe::exec::mpi {

class FailureWatch {
 public:
  explicit FailureWatch(const MpiWorld& world) : world_(world) {}

  // This process's run is aborted: the next check() throws Aborted. Any thread.
  void abort() { aborted_.store(true, std::memory_order_release); }
  // Between the polls of a wait: throws Aborted after abort(), PeerFailed
  // (acknowledged) when another process announced its failure.
  void check();
  // Sends `line` to every other process and waits up to `ack_seconds` for
  // their acknowledgements. Nothing when a peer's failure is what ended this
  // run (that peer has told everyone). Never throws.
  void announce(const std::string& line, double ack_seconds = 2.0) noexcept;

 private:
  const MpiWorld& world_;
  std::atomic<bool> aborted_{false};
  bool peer_failed_ = false;  // a peer's line was read here
};

}  // namespace gpipe::exec::mpi
