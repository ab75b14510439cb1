#include "exec/cpu/cpu_backend.hpp"

#include <cmath>

#include <fmt/format.h>

#include "exec/cpu/device_name.hpp"
#include "exec/cpu/profiler.hpp"
#include "exec/mpi/mpi_run.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::cpu {

namespace {

bool finite_values(const Tensor& tensor) {
  for (float v : tensor.f32()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// "cpu: one process per rank (4 processes, mpirun), MPI between ranks, on <cpu>"
std::string processes_where(const LaunchRole& role, const std::string& cpu) {
  return fmt::format("cpu: one process per rank ({} processes, {}), MPI between ranks, on {}",
                     role.launch.world_size, role.launch.launcher, cpu);
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
                                     const BackendOptions& /*options*/,
                                     const LaunchRole& role) const override {
    if (role.distributed) return processes_where(role, device_name());
    return fmt::format("cpu: one thread per rank on {}", device_name());
  }
  [[nodiscard]] BackendRun train(const TrainOptions& options, const BackendOptions& /*backend_options*/,
                                 const LaunchRole& role) const override {
    BackendRun run;
    if (role.distributed) {
      Trained<CpuBackend> trained = mpi::train_as_mpi_process(options, role.launch.launcher);
      run.result = std::move(trained.result);
      run.where = processes_where(role, device_name());
      run.clock = std::move(trained.clock);
      return run;
    }
    run.result = cpu::train(options);
    run.where = fmt::format("cpu: one thread per rank on {}", run.result.timeline.info.device);
    return run;
  }
  [[nodiscard]] profiles::Profile profile(const models::Model& model, std::span<const int> sizes,
                                          const ProfilerOptions& options,
                                          const BackendOptions& /*backend_options*/,
                                          int /*stages*/) const override {
    return profile_cpu(model, sizes, options);
  }
};

}  // namespace

bool CpuBackend::all_finite(const Tensor& tensor, const Context& /*context*/) {
  return finite_values(tensor);
}

std::vector<float> CpuBackend::to_host(const Tensor& tensor, const Context& /*context*/) {
  return {tensor.f32().begin(), tensor.f32().end()};
}

bool CpuBackend::RankDevice::all_finite(const Tensor& tensor) const { return finite_values(tensor); }

double CpuBackend::RankDevice::sum(const Tensor& tensor) const {
  double total = 0;
  for (float v : tensor.f32()) total += v;
  return total;
}

CpuBackend::Run::Run(const TrainOptions& /*options*/, const RunSettings& settings,
                     const Placement& where, const Options& backend_options)
    : timer_(settings.schedule->num_ranks, settings.measured_steps),
      in_process_link_(settings.schedule->num_ranks, &timer_),
      devices_(static_cast<std::size_t>(settings.schedule->num_ranks)) {
  if (where.group != nullptr) {
    if (!backend_options.process_link) {
      throw InputError("the cpu backend has no link between processes here: start it without a launcher");
    }
    process_link_ = backend_options.process_link(timer_);
  }
}

std::string CpuBackend::Run::device_name() const { return cpu::device_name(); }

TrainResult train(const TrainOptions& options) {
  return train_in_process<CpuBackend>(options).result;
}

const Backend& cpu_backend() {
  static const CpuEntry entry;
  return entry;
}

}  // namespace gpipe::exec::cpu
