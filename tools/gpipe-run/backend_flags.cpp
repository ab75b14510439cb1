#include "tools/gpipe-run/backend_flags.hpp"

#include <iostream>

#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cpu/compute_team.hpp"
#include "exec/runtime/run_settings.hpp"

namespace gpipe::tools {

void CudaFlags::add_to(CLI::App& cmd, bool with_timing) {
  device_option = cmd.add_option("--device", device, "cuda: the GPU to run on")
                      ->check(CLI::Range(0, 1023))
                      ->capture_default_str();
  sm_option = cmd.add_option("--sm-per-stage", sm_per_stage,
                             "cuda: SMs of each rank's partition (0: the device's SMs split "
                             "evenly; rounded up to the GPU's granularity, 8 on Hopper)")
                  ->check(CLI::Range(0, 100000))
                  ->capture_default_str();
  if (!with_timing) return;
  timing_option = cmd.add_option("--timing", timing,
                                 "cuda: how actions are timed: cupti (kernel timestamps, with "
                                 "kernel events in --trace) or events (CUDA events)")
                      ->check(CLI::IsMember({"cupti", "events"}))
                      ->capture_default_str();
}

std::vector<std::string> CudaFlags::args() const {
  std::vector<std::string> out;
  const CudaFlags defaults;
  if (device != defaults.device) out.insert(out.end(), {"--device", std::to_string(device)});
  if (sm_per_stage != defaults.sm_per_stage) out.insert(out.end(), {"--sm-per-stage", std::to_string(sm_per_stage)});
  if (timing != defaults.timing) out.insert(out.end(), {"--timing", timing});
  return out;
}

void CudaFlags::check_backend(const std::string& backend) const {
  if (backend == "cuda") return;
  for (const CLI::Option* o : {device_option, sm_option, timing_option}) {
    if (o != nullptr && o->count() > 0) {
      throw InputError(fmt::format("{} applies to --backend cuda only", o->get_name()));
    }
  }
}

void CpuFlags::add_to(CLI::App& cmd) {
  option = cmd.add_option("--threads-per-rank", threads_per_rank,
                          "cpu: threads each rank computes with, splitting its GEMMs and elementwise passes "
                          "(default: this machine's cores shared by the ranks on it, at least 1)")
               ->check(CLI::Range(1, exec::kMaxThreadsPerRank));
}

std::vector<std::string> CpuFlags::args() const {
  if (threads_per_rank == 0) return {};
  return {"--threads-per-rank", std::to_string(threads_per_rank)};
}

void CpuFlags::check_backend(const std::string& backend) const {
  if (backend != "cpu" && option != nullptr && option->count() > 0) {
    throw InputError("--threads-per-rank applies to --backend cpu only");
  }
}

int CpuFlags::threads_for(int ranks_here) const {
  return threads_per_rank > 0 ? threads_per_rank : exec::cpu::default_threads_per_rank(ranks_here);
}

void require_backend(const std::string& backend) { exec::find_backend(backend).require_available(); }

ProcessRole process_role(const std::string& backend, const schedules::Schedule& schedule, int stage_processes) {
  ProcessRole role;
  const exec::Backend& entry = exec::find_backend(backend);
  if (!entry.runs_ranks_as_processes()) return role;  // every rank here
  exec::LaunchRole& launch = role.launch;
  launch.launch = exec::parse_launch_environment(exec::current_environment(), entry.meets_at_store());
  launch.distributed = launch.launch.world_size > 1;
  if (launch.distributed) {
    role.reports =
        schedule.rank_of(schedules::Stage{schedule.num_stages - 1}).value * stage_processes == launch.launch.rank;
  }
  return role;
}

std::string describe_backend(const std::string& backend, const exec::BackendOptions& options,
                             const schedules::Schedule& schedule, const ProcessRole& role) {
  return exec::find_backend(backend).describe(schedule, options, role.launch);
}

int threads_per_rank(const std::string& backend, const CpuFlags& cpu, int ranks, const exec::LaunchInfo& launch) {
  if (backend != "cpu") return 1;
  return cpu.threads_for(launch.world_size > 1 ? launch.local_size : ranks);
}

profiles::Profile measure_profile(const std::string& backend, const CudaFlags& cuda, int stages,
                                  const models::Model& model, const std::vector<int>& sizes,
                                  exec::ProfilerOptions options) {
  options.on_note = [](const std::string& note) { std::cerr << note << "\n"; };
  return exec::find_backend(backend).profile(model, sizes, options, cuda.options(), stages);
}

exec::BackendRun run_training(const std::string& backend, const CudaFlags& cuda,
                              const exec::TrainOptions& options, const ProcessRole& role) {
  if (role.launch.distributed &&
      ((cuda.device_option != nullptr && cuda.device_option->count() > 0) ||
       (cuda.sm_option != nullptr && cuda.sm_option->count() > 0))) {
    throw InputError("--device and --sm-per-stage do not apply under a launcher: each process runs "
                     "one rank on the whole of GPU LOCAL_RANK");
  }
  return exec::find_backend(backend).train(options, cuda.options(), role.launch);
}

}  // namespace gpipe::tools
