// The link between two ranks that are processes, measured: a ping-pong over
// MPI between ranks 0 and 1 at message sizes from 8 B to 64 MiB, the median
// round trip of each halved, then fitted as latency + bytes / bandwidth
// (profiles/link_fit.hpp). What `gpipe-run profile --backend cpu` writes as
// the profile's link when started under mpirun or srun. Declared in every
// build; without MPI it says so.
#pragma once

#include <cstdint>
#include <functional>

#include "profiles/profile.hpp"

namespace gpipe::exec::mpi {

struct LinkProbeOptions {
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = std::int64_t{64} << 20;  // sizes double from min to max
  // Called on rank 0 as each size is measured.
  std::function<void(const profiles::LinkPoint&)> on_point;
};

struct ProbedLink {
  int rank = 0;  // this process's
  int world_size = 1;
  profiles::Link link;  // on rank 0: fitted, with its points; elsewhere empty
};

// Collective: every process of the launch calls it (ranks past 1 only wait).
// Starts and ends MPI. Throws InputError with fewer than two processes,
// RunError without MPI in this build or when MPI fails.
[[nodiscard]] ProbedLink probe_mpi_link(const LinkProbeOptions& options);

}  // namespace gpipe::exec::mpi
