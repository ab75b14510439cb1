#include "exec/registry/cpu_entry.hpp"

#include <string>

#include <fmt/format.h>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/device_name.hpp"
#include "exec/cpu/profiler.hpp"
#include "exec/inference/cpu_serving.hpp"
#include "exec/mpi/mpi_run.hpp"

namespace gpipe::exec {
namespace {

using cpu::CpuBackend;

// "one thread per rank", "4 threads per rank"
std::string threads_phrase(int threads_per_rank) {
  return threads_per_rank == 1 ? "one thread per rank" : fmt::format("{} threads per rank", threads_per_rank);
}

// "cpu: one process per rank (4 processes, mpirun), MPI between ranks, one thread each on <cpu>"
std::string processes_where(const LaunchRole& role, const std::string& cpu, int threads_per_rank) {
  return "cpu: " + cpu::processes_description(role.launch.world_size, role.launch.launcher, threads_per_rank, cpu);
}

// The CPU backend as the command lines see it.
class CpuEntry final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return CpuBackend::kName; }
  void require_available() const override {}
  // Under mpirun or srun, one rank per process over MPI (exec/mpi/).
  [[nodiscard]] bool runs_ranks_as_processes() const override { return true; }
  [[nodiscard]] bool meets_at_store() const override { return false; }
  [[nodiscard]] std::string describe(const schedules::Schedule& /*schedule*/,
                                     const BackendOptions& backend_options,
                                     const LaunchRole& role) const override {
    if (role.distributed) return processes_where(role, cpu::device_name(), backend_options.threads_per_rank);
    return fmt::format("cpu: {} on {}", threads_phrase(backend_options.threads_per_rank), cpu::device_name());
  }
  [[nodiscard]] BackendRun train(const TrainOptions& options, const BackendOptions& /*backend_options*/,
                                 const LaunchRole& role) const override {
    BackendRun run;
    if (role.distributed) {
      Trained<CpuBackend> trained = mpi::train_as_mpi_process(options, role.launch.launcher);
      run.result = std::move(trained.result);
      run.where = processes_where(role, cpu::device_name(), options.threads_per_rank);
      run.clock = std::move(trained.clock);
      return run;
    }
    run.result = cpu::train(options);
    run.where = fmt::format("cpu: {} on {}", threads_phrase(options.threads_per_rank), cpu::device_name());
    return run;
  }
  [[nodiscard]] profiles::Profile profile(const models::Model& model, std::span<const int> sizes,
                                          const ProfilerOptions& options,
                                          const BackendOptions& /*backend_options*/,
                                          int /*stages*/) const override {
    return cpu::profile_cpu(model, sizes, options);
  }
  [[nodiscard]] inference::ServingResult serve(const inference::ServingRequest& request,
                                              const BackendOptions& /*backend_options*/) const override {
    return inference::run_cpu_serving(request);
  }
};

}  // namespace

const Backend& cpu_entry() {
  static const CpuEntry entry;
  return entry;
}

}  // namespace gpipe::exec
