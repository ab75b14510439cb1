// A backend as the command lines see it: what gpipe-run trains, profiles and
// serves on, whatever runs it. Each is the shared runtime (exec/runtime/)
// instantiated with its own stages, links, timers and memory. The registry
// (exec/registry/) finds them by name: `cpu` (its entry there, over
// exec/cpu/, exec/mpi/ and exec/inference/) and `cuda` (exec/cuda/backend/).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/dist/bootstrap.hpp"
#include "exec/inference/serving_request.hpp"
#include "exec/profiling/profiler_options.hpp"
#include "exec/runtime/process_group.hpp"
#include "exec/runtime/train_options.hpp"
#include "models/model.hpp"
#include "profiles/profile.hpp"
#include "schedules/schedule.hpp"

namespace gpipe::exec {

// Settings only some backends read (the CUDA device, its SM partitions and
// timing); the command lines refuse them with a backend that does not.
struct BackendOptions {
  int device = 0;
  int sm_per_stage = 0;          // 0: the device's SMs split evenly over the ranks
  std::string timing = "cupti";  // "cupti" or "events"
  int threads_per_rank = 1;      // cpu: as TrainOptions::threads_per_rank, for describe()
};

// Where this process sits: every rank here, or (under a launcher with more
// than one process) one rank per process.
struct LaunchRole {
  LaunchInfo launch;
  bool distributed = false;
};

// A training run, and what the command lines say of it.
struct BackendRun {
  TrainResult result;
  // "cpu: one thread per rank on <cpu>", "cuda: 4 partitions of 32 SMs ... timed with cupti"
  std::string where;
  std::string note;  // a fallback worth saying (no green contexts, no CUPTI), else ""
  // On a device: its own peak of used memory (cudaMemGetInfo: every process
  // and library) and the allocator's peak per rank of this process
  // (activations, messages, temporaries, weights); empty elsewhere.
  std::int64_t device_peak_used_bytes = 0;
  std::vector<std::int64_t> allocator_peak_bytes;
  // Adds the measured step's device kernels (Kineto-shaped) to a Chrome
  // trace; empty where there are none.
  std::function<void(nlohmann::json& trace)> add_kernel_events;
  // With ranks as processes: how their intervals were put on one time base
  // (the trace's otherData.clock).
  ClockAgreement clock;
};

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;
  // Throws RunError (exit status 1: the request is well-formed, this machine
  // or build cannot run it), e.g. "no CUDA device: ...".
  virtual void require_available() const = 0;
  // Whether a launch with more than one process runs one rank per process.
  [[nodiscard]] virtual bool runs_ranks_as_processes() const = 0;
  // Whether such processes meet at a rendezvous store (MASTER_ADDR and
  // MASTER_PORT), rather than through the launcher (MPI).
  [[nodiscard]] virtual bool meets_at_store() const = 0;
  // The header line of a run, before it starts.
  [[nodiscard]] virtual std::string describe(const schedules::Schedule& schedule,
                                             const BackendOptions& options,
                                             const LaunchRole& role) const = 0;
  [[nodiscard]] virtual BackendRun train(const TrainOptions& options,
                                         const BackendOptions& backend_options,
                                         const LaunchRole& role) const = 0;
  // A measured profile of `model` at `sizes`, on the part of the device one
  // stage of a `stages`-stage run gets.
  [[nodiscard]] virtual profiles::Profile profile(const models::Model& model,
                                                  std::span<const int> sizes,
                                                  const ProfilerOptions& options,
                                                  const BackendOptions& backend_options,
                                                  int stages) const = 0;
  // An inference stream (gpipe-run infer), every rank in this process.
  [[nodiscard]] virtual inference::ServingResult serve(const inference::ServingRequest& request,
                                                      const BackendOptions& backend_options) const = 0;
};

}  // namespace gpipe::exec
