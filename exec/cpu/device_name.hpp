// The name of this machine's CPU, for the timeline's and the profile's
// `device` field.
#pragma once

#include <string>

namespace gpipe::exec::cpu {

// The "model name" line of /proc/cpuinfo; "cpu" when unknown. With more than
// one thread per rank, that too ("AMD EPYC, 2 threads per rank"): a profile
// or a trace measured so is not one of a thread per rank.
[[nodiscard]] std::string device_name(int threads_per_rank = 1);

// Ranks as processes: "one process per rank (4 processes, mpirun), MPI
// between ranks, one thread each on <cpu>" (train's and infer's header).
[[nodiscard]] std::string processes_description(int processes, const std::string& launcher, int threads_per_rank,
                                                const std::string& cpu);

}  // namespace gpipe::exec::cpu
