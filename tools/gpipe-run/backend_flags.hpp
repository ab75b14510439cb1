// Where a gpipe-run command sends its work: the backend flags (--backend, the
// CPU's --threads-per-rank, and the CUDA ones: --device, --sm-per-stage, --timing) and the calls that reach
// the backend registry (exec/registry/registry.hpp) with them. The commands ask for a
// training run or a profile and get the same results whatever the backend.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "exec/registry/registry.hpp"
#include "exec/runtime/train_options.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::tools {

// The CUDA backend's flags (refused with another backend when given).
struct CudaFlags {
  int device = 0;
  int sm_per_stage = 0;
  std::string timing = "cupti";

  // --device and --sm-per-stage, and --timing when `with_timing` (train, validate).
  void add_to(CLI::App& cmd, bool with_timing = true);
  // Throws InputError when a CUDA flag was given with another backend.
  void check_backend(const std::string& backend) const;
  [[nodiscard]] exec::BackendOptions options() const { return {device, sm_per_stage, timing}; }
  // The flags that make these values again: those not at their defaults.
  [[nodiscard]] std::vector<std::string> args() const;

  CLI::Option* device_option = nullptr;
  CLI::Option* sm_option = nullptr;
  CLI::Option* timing_option = nullptr;
};

// The CPU backend's flag (refused with another backend when given):
// --threads-per-rank, the threads each rank computes with.
struct CpuFlags {
  int threads_per_rank = 0;  // 0: the default, the cores shared by the ranks on them

  void add_to(CLI::App& cmd);
  // Throws InputError when the flag was given with another backend.
  void check_backend(const std::string& backend) const;
  // --threads-per-rank N, or nothing for the default.
  [[nodiscard]] std::vector<std::string> args() const;
  // The flag's value, or its default with `ranks_here` ranks on this machine's cores.
  [[nodiscard]] int threads_for(int ranks_here) const;

  CLI::Option* option = nullptr;
};

// Throws RunError (exit status 1) when `backend` cannot run here: "no CUDA
// device: ..." for cuda without a GPU, or that this build has no CUDA backend.
void require_backend(const std::string& backend);

// Where this process sits. Under torchrun, mpirun or srun with more than one
// process, a backend that runs ranks as processes runs one rank per process,
// and only the process of the loss stage reports (losses, metrics, trace).
struct ProcessRole {
  exec::LaunchRole launch;
  bool reports = true;
};
// The process that reports: the loss stage's rank, of replica 0 and part 0
// (world rank r P with P = T x C processes a stage, tensor parallelism T and
// context parallelism C, exec/mpi/mpi_process_group.hpp).
[[nodiscard]] ProcessRole process_role(const std::string& backend, const schedules::Schedule& schedule,
                                       int stage_processes = 1);

// The header line of a run, before it starts: "cpu: one thread per rank on
// <cpu>", "cuda: 4 ranks on SM partitions of GPU 0 (...), an even split", or
// for one rank of a multi-process run, its rank, GPU and launcher.
[[nodiscard]] std::string describe_backend(const std::string& backend, const exec::BackendOptions& options,
                                           const schedules::Schedule& schedule, const ProcessRole& role);

// The threads each rank of this process computes with: --threads-per-rank, or
// its default for the ranks on this machine (the `ranks` of the run when they
// are threads here; the processes on this node under a launcher with more
// than one); 1 for a backend other than cpu.
[[nodiscard]] int threads_per_rank(const std::string& backend, const CpuFlags& cpu, int ranks,
                                   const exec::LaunchInfo& launch);

// Measures a profile of `model` at `sizes` where `backend` says, on the part
// of the device one stage of a `stages`-stage run gets; notes go to stderr.
[[nodiscard]] profiles::Profile measure_profile(const std::string& backend, const CudaFlags& cuda,
                                                int stages, const models::Model& model,
                                                const std::vector<int>& sizes,
                                                exec::ProfilerOptions options);

// Trains `options` where `backend` and `role` say.
[[nodiscard]] exec::BackendRun run_training(const std::string& backend, const CudaFlags& cuda,
                                            const exec::TrainOptions& options,
                                            const ProcessRole& role = {});

}  // namespace gpipe::tools
