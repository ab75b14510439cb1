// gpipe-run train's flags: the run's (run_flags.hpp), the pipeline's
// (tools/common/pipeline_flags.hpp), the backends', the replicas and parts,
// the steps and what the run writes. `gpipe-run validate` fills them in to
// launch a configuration as processes, and args() is its command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/common/pipeline_flags.hpp"
#include "tools/gpipe-run/backend_flags.hpp"
#include "tools/gpipe-run/run_flags.hpp"

namespace gpipe::tools {

struct TrainFlags {
  RunFlags run;
  CudaFlags cuda;
  CpuFlags cpu;
  PipelineFlags pipeline;
  int data_parallel = 1;    // D replicas, each of `batch` samples
  bool reduce_after_backward = false;  // plan::PlanRequest::reduce_after_backward
  int tensor_parallel = 1;  // T parts of each rank's blocks
  int context_parallel = 1;  // C processes share each sequence
  int zero = 0;             // ZeRO's stage over the replicas
  int steps = 0;
  int measure_steps = 1;
  std::string trace;
  bool json = false;
  bool check_finite = false;
  std::string inject_fault;

  void add_to(CLI::App& cmd);
  // `gpipe-run train` and these flags: what makes these values again.
  [[nodiscard]] std::vector<std::string> args() const;
};

}  // namespace gpipe::tools
