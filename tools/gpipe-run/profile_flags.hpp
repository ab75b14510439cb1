// gpipe-run profile's flags: the model and the sizes to measure, the passes,
// where it measures (a rank of a K-stage run, one part of a tensor-parallel
// group) and what the link is fitted to. `gpipe-run validate` fills them in
// to measure a profile under a launcher, and args() is its command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/gpipe-run/backend_flags.hpp"

namespace gpipe::tools {

struct ProfileFlags {
  std::string backend = "cpu";
  std::string model;
  std::string micro_batch_sizes;
  int tensor_parallel = 1;  // under mpirun -np T: one part of each block, the T processes at once
  int context_parallel = 1;  // under mpirun -np C: one member's tokens, the C processes at once
  std::string out;
  int warmup = 2;
  int repeats = 5;
  std::uint64_t seed = 1;
  std::string optimizer = "adamw";
  CudaFlags cuda;
  CpuFlags cpu;
  int stages = 1;                     // measure as a rank of a K-stage run computes (its SM partition, its threads)
  std::string link_fit = "pipeline";  // under mpirun: what the bandwidth is fitted to
  std::string workload = "training";

  void add_to(CLI::App& cmd);
  // `gpipe-run profile` and these flags: what makes these values again.
  [[nodiscard]] std::vector<std::string> args() const;
};

}  // namespace gpipe::tools
