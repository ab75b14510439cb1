// A run told to stop from outside: SIGTERM (mpirun and srun send it to every
// process of a job when one process has ended) or SIGINT. Once the handlers
// are installed, such a signal is recorded, and the supervisor
// (supervise.hpp) fails the run with a line saying where its ranks were,
// instead of the process dying silently. Installed for ranks as processes
// only: a run of threads keeps the default (the signal ends it).
#pragma once

namespace gpipe::exec {

// Installs the handlers (idempotent).
void catch_termination_signals();

// The signal received since, or 0.
[[nodiscard]] int termination_signal();

}  // namespace gpipe::exec
