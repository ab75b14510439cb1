// Where this process sits in a multi-process run, read from the launcher's
// environment: torchrun style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT), Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK)
// or Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). MPI and Slurm
// do not name a rendezvous point, so MASTER_ADDR and MASTER_PORT are needed
// with them too when there is more than one process. The environment is
// passed in as a map so every case is testable.
#pragma once

#include <map>
#include <string>

namespace gpipe::exec {

using Environment = std::map<std::string, std::string>;

struct LaunchInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;            // the GPU of this process on its node
  int local_size = 1;            // processes on this node (the cores they share)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "none";  // "torchrun", "mpirun", "srun" or "none"

  bool operator==(const LaunchInfo&) const = default;
};

// Reads the launch variables. With none of them set, a single process
// (rank 0 of 1). Throws InputError naming the variable when one is
// malformed (not an integer, rank outside [0, world size), port outside
// 1-65535), missing (RANK without WORLD_SIZE; no MASTER_ADDR with more than
// one process), or when two launchers' variables disagree on rank or size.
// LOCAL_RANK defaults to RANK when torchrun-style variables omit it (one node);
// the processes on this node come from LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE
// or SLURM_NTASKS_PER_NODE, and are the whole world when none is set.
// `rendezvous`: whether the processes meet at MASTER_ADDR:MASTER_PORT (NCCL's
// do; MPI's find each other through the launcher, and ignore them).
[[nodiscard]] LaunchInfo parse_launch_environment(const Environment& env, bool rendezvous = true);

// This process's environment (environ) as a map.
[[nodiscard]] Environment current_environment();

}  // namespace gpipe::exec
