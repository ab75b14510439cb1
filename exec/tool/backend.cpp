#include "exec/tool/backend.hpp"

#include <iostream>

#include <fmt/format.h>

#include "schedules/error.hpp"
#include "cli/units.hpp"

#ifdef GPIPE_HAVE_CUDA
#include "exec/cuda/cupti/kernel_events.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/profiler/layer_profiler.hpp"
#include "exec/cuda/backend/cuda_trainer.hpp"
#include "exec/cuda/backend/distributed_trainer.hpp"
#endif

namespace gpipe::cli {

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

void CudaFlags::check_backend(const std::string& backend) const {
  if (backend == "cuda") return;
  for (const CLI::Option* o : {device_option, sm_option, timing_option}) {
    if (o != nullptr && o->count() > 0) {
      throw InputError(fmt::format("{} applies to --backend cuda only", o->get_name()));
    }
  }
}

void require_backend(const std::string& backend) {
  // Exit status 1, not 2: the request is well-formed, this machine or build cannot run it.
  if (backend != "cuda") return;
#ifdef GPIPE_HAVE_CUDA
  exec::cuda::require_device();  // "no CUDA device: ..." on a machine without one
#else
  throw RunError("--backend cuda: this build has no CUDA backend (configure with the CUDA toolkit)");
#endif
}

ProcessRole process_role(const std::string& backend, const schedules::Schedule& schedule) {
  ProcessRole role;
  if (backend != "cuda") return role;  // the CPU backend runs every rank in this process
  role.launch = exec::parse_launch_environment(exec::current_environment());
  role.distributed = role.launch.world_size > 1;
  if (role.distributed) {
    role.reports = schedule.rank_of(schedules::Stage{schedule.num_stages - 1}).value == role.launch.rank;
  }
  return role;
}

std::string describe_backend(const std::string& backend, const CudaFlags& cuda,
                             const schedules::Schedule& schedule, const ProcessRole& role) {
  if (backend != "cuda") return fmt::format("cpu: one thread per rank on {}", exec::cpu_device_name());
#ifdef GPIPE_HAVE_CUDA
  if (role.distributed) {
    return fmt::format("cuda: rank {} of {} ({}), GPU {} ({}), NCCL between ranks", role.launch.rank,
                       role.launch.world_size, role.launch.launcher, role.launch.local_rank,
                       exec::cuda::device_name(role.launch.local_rank));
  }
  return fmt::format("cuda: {} ranks on SM partitions of GPU {} ({}), {}", schedule.num_ranks,
                     cuda.device, exec::cuda::device_name(cuda.device),
                     cuda.sm_per_stage > 0 ? fmt::format("{} SMs each", cuda.sm_per_stage)
                                           : std::string("an even split"));
#else
  (void)cuda;
  (void)schedule;
  (void)role;
  return "cuda";
#endif
}

profiles::Profile measure_profile(const std::string& backend, const CudaFlags& cuda, int stages,
                                  const models::Model& model, const std::vector<int>& sizes,
                                  const exec::ProfilerOptions& options) {
  if (backend != "cuda") return exec::profile_cpu(model, sizes, options);
#ifdef GPIPE_HAVE_CUDA
  exec::cuda::profiler::CudaProfilerOptions c;
  c.warmup = options.warmup;
  c.repeats = options.repeats;
  c.seed = options.seed;
  c.optimizer = options.optimizer;
  c.stages = stages;
  c.sm_per_stage = cuda.sm_per_stage;
  c.device = cuda.device;
  c.on_partitions = [](const exec::cuda::SmPartitions& partitions) {
    if (partitions.green()) {
      std::cerr << fmt::format("SM partitions: {} in green contexts; the layers run in the first\n",
                               exec::cuda::describe(partitions.split(), partitions.total_sms()));
    } else {
      std::cerr << fmt::format("SM partitions: none, {}\n", partitions.why());
    }
  };
  c.on_pass = options.on_pass;
  c.on_layer = options.on_layer;
  return exec::cuda::profiler::profile_cuda(model, sizes, c);
#else
  (void)cuda;
  (void)stages;
  require_backend(backend);
  return {};
#endif
}

BackendRun run_training(const std::string& backend, const CudaFlags& cuda,
                        const exec::TrainOptions& options, const ProcessRole& role) {
  BackendRun run;
  if (backend != "cuda") {
    run.result = exec::train(options);
    run.where = fmt::format("cpu: one thread per rank on {}", run.result.timeline.info.device);
    return run;
  }
#ifdef GPIPE_HAVE_CUDA
  exec::cuda::CudaTrainOptions c;
  c.device = cuda.device;
  c.sm_per_stage = cuda.sm_per_stage;
  c.timing = cuda.timing == "events" ? exec::cuda::ActionTiming::events : exec::cuda::ActionTiming::cupti;
  auto cuda_result = std::make_shared<exec::cuda::CudaTrainResult>();
  if (role.distributed) {
    if (cuda.device_option->count() > 0 || cuda.sm_option->count() > 0) {
      throw InputError("--device and --sm-per-stage do not apply under a launcher: each process runs "
                       "one rank on the whole of GPU LOCAL_RANK");
    }
    *cuda_result = exec::cuda::train_cuda_rank(options, c, role.launch).result;
  } else {
    *cuda_result = exec::cuda::train_cuda(options, c);
  }
  run.where = fmt::format("cuda: {} on {}, timed with {}", cuda_result->partitions,
                          cuda_result->train.timeline.info.device, cuda_result->timing);
  run.note = cuda_result->timing_note;
  if (!cuda_result->green && !cuda_result->distributed) {
    run.note += (run.note.empty() ? "" : "; ") + std::string("no green contexts: the ranks share every SM");
  }
  if (cuda_result->dropped_records > 0) {
    run.note += (run.note.empty() ? "" : "; ") +
                fmt::format("CUPTI dropped {} records", cuda_result->dropped_records);
  }
  // Over NCCL each process has its own kernels; the reporter has only its own.
  if (cuda_result->timing == "cupti" && !cuda_result->distributed) {
    run.add_kernel_events = [cuda_result](nlohmann::json& trace) {
      exec::cuda::cupti::append_gpu_events(trace, cuda_result->step_records, cuda_result->step_ids,
                                           cuda_result->step_origin_ns);
    };
  }
  std::string per_rank;
  for (std::int64_t bytes : cuda_result->allocator_peak_bytes) {
    per_rank += (per_rank.empty() ? "" : ", ") + format_bytes(bytes);
  }
  run.device_memory = fmt::format(
      "device memory: {} peak used on the GPU (cudaMemGetInfo: every process and library); "
      "the allocator's peak per rank (activations, messages, temporaries, weights): {}",
      format_bytes(cuda_result->device_peak_used_bytes), per_rank);
  run.result = std::move(cuda_result->train);
  return run;
#else
  (void)cuda;
  (void)role;
  require_backend(backend);
  return run;
#endif
}

}  // namespace gpipe::cli
