// The one place gpipe-run chooses where a run goes: CPU threads
// (exec::train) or one GPU with a stage per SM partition (exec::cuda::
// train_cuda, in a build with the CUDA toolkit). The commands ask for a
// training run and get the same TrainResult either way, plus a line saying
// what ran where and, on the GPU, the kernel events for a trace.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "exec/dist/bootstrap.hpp"
#include "exec/cpu/profiler.hpp"
#include "exec/runtime/trainer.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::cli {

// The CUDA backend's flags (ignored by --backend cpu, refused with it when given).
struct CudaFlags {
  int device = 0;
  int sm_per_stage = 0;
  std::string timing = "cupti";

  // --device and --sm-per-stage, and --timing when `with_timing` (train, validate).
  void add_to(CLI::App& cmd, bool with_timing = true);
  // Throws InputError when a CUDA flag was given with --backend cpu.
  void check_backend(const std::string& backend) const;

  CLI::Option* device_option = nullptr;
  CLI::Option* sm_option = nullptr;
  CLI::Option* timing_option = nullptr;
};

// Throws RunError (exit status 1) when `backend` cannot run here: "no CUDA
// device: ..." for cuda without a GPU, or that this build has no CUDA backend.
void require_backend(const std::string& backend);

// Where this process sits. Under torchrun, mpirun or srun with more than one
// process, --backend cuda runs one rank per process (a GPU each, over NCCL),
// and only the process of the loss stage reports (losses, metrics, trace).
struct ProcessRole {
  exec::LaunchInfo launch;
  bool distributed = false;
  bool reports = true;
};
[[nodiscard]] ProcessRole process_role(const std::string& backend, const schedules::Schedule& schedule);

// The header line of a run, before it starts: "cpu: one thread per rank on
// <cpu>", "cuda: 4 ranks on SM partitions of NVIDIA H100 ... (an even split)",
// or for one rank of a multi-process run, its rank, GPU and launcher.
[[nodiscard]] std::string describe_backend(const std::string& backend, const CudaFlags& cuda,
                                           const schedules::Schedule& schedule, const ProcessRole& role);

struct BackendRun {
  exec::TrainResult result;
  // "cuda: 4 partitions of 32 SMs (4 of 132 unused) on NVIDIA H100 80GB HBM3, timed with cupti"
  std::string where;
  std::string note;  // a fallback worth saying (no green contexts, no CUPTI), else ""
  // On the GPU: the device's own peak of used memory (cudaMemGetInfo) beside
  // the allocator's exact peak per rank, one line; "" on the CPU.
  std::string device_memory;
  // Adds the measured step's kernel events (Kineto-shaped) to a Chrome trace;
  // does nothing for the CPU or without CUPTI.
  std::function<void(nlohmann::json& trace)> add_kernel_events;
};

// Measures a profile of `model` at `sizes`: on CPU threads (exec::profile_cpu,
// source "cpu"), or on the GPU in the SM partition one stage of a
// `stages`-stage run gets (source "cupti"), saying on stderr which partition.
[[nodiscard]] profiles::Profile measure_profile(const std::string& backend, const CudaFlags& cuda,
                                                int stages, const models::Model& model,
                                                const std::vector<int>& sizes,
                                                const exec::ProfilerOptions& options);

// Trains `options` where `backend` and `role` say.
[[nodiscard]] BackendRun run_training(const std::string& backend, const CudaFlags& cuda,
                                      const exec::TrainOptions& options,
                                      const ProcessRole& role = {});

}  // namespace gpipe::cli
