// gpipe-run validate's flags: the run's (run_flags.hpp), the grid's
// (tools/common/grid_flags.hpp) or an inference grid's, the backends', the
// steps and rounds, the profiler's passes, the replicas and parts, the
// launcher, and what it writes.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "exec/profiling/profiler_options.hpp"
#include "exec/runtime/optimizer_config.hpp"
#include "tools/common/grid_flags.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/run_flags.hpp"
#include "tools/gpipe-run/validate_inference.hpp"

namespace gpipe::tools {

struct ValidateFlags {
  RunFlags run;
  CudaFlags cuda;
  CpuFlags cpu;
  GridFlags grid;
  int steps = 5;
  int rounds = 3;
  std::string save_profile;
  std::string out;
  bool json = false;
  int warmup = 2;
  int repeats = 5;
  std::string launcher;     // "": every configuration in this process
  int data_parallel = 1;    // replicas of every configuration (under the launcher)
  int zero = 0;             // ZeRO's stage over them
  int tensor_parallel = 1;  // parts of every rank's blocks (under the launcher)
  int context_parallel = 1;  // processes sharing each sequence (under the launcher)
  InferenceValidateFlags inference;

  void add_to(CLI::App& cmd);
  // How validate's profiles are measured: --warmup, --repeats and --seed,
  // with the rows' optimizer and threads per rank; a bar on a terminal.
  [[nodiscard]] exec::ProfilerOptions profiler_options(const exec::OptimizerConfig& optimizer,
                                                       int threads_per_rank) const;
};

}  // namespace gpipe::tools
