#include "exec/cuda/backend/cuda_backend.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/cuda/backend/cupti_action_timer.hpp"
#include "exec/cuda/backend/in_process_device_link.hpp"
#include "exec/cuda/backend/nccl_device_link.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/cupti/kernel_events.hpp"
#include "exec/cuda/inference/cuda_serving.hpp"
#include "exec/cuda/layers/ops.hpp"
#include "exec/cuda/nccl/nccl_gradient_reducer.hpp"
#include "exec/cuda/nccl/nccl_transport.hpp"
#include "exec/cuda/profiler/layer_profiler.hpp"
#include "exec/dist/train_as_process.hpp"
#include "models/collective.hpp"

namespace gpipe::exec::cuda {

using schedules::Rank;

namespace {

// The device, checked and made current before anything is allocated on it.
int current_device(int device) {
  require_device();
  use_device(device);
  return device;
}

std::string join_note(std::string note, const std::string& more) {
  return note.empty() ? more : note + "; " + more;
}

// The CUDA backend as the command lines see it.
class CudaEntry final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return CudaBackend::kName; }
  void require_available() const override { CudaBackend::require_available(); }
  [[nodiscard]] bool runs_ranks_as_processes() const override { return true; }
  [[nodiscard]] bool meets_at_store() const override { return true; }

  [[nodiscard]] std::string describe(const schedules::Schedule& schedule, const BackendOptions& options,
                                     const LaunchRole& role) const override {
    if (role.distributed) {
      return fmt::format("cuda: rank {} of {} ({}), GPU {} ({}), NCCL between ranks", role.launch.rank,
                         role.launch.world_size, role.launch.launcher, role.launch.local_rank,
                         device_name(role.launch.local_rank));
    }
    return fmt::format("cuda: {} ranks on SM partitions of GPU {} ({}), {}", schedule.num_ranks,
                       options.device, device_name(options.device),
                       options.sm_per_stage > 0 ? fmt::format("{} SMs each", options.sm_per_stage)
                                                : std::string("an even split"));
  }

  [[nodiscard]] BackendRun train(const TrainOptions& options, const BackendOptions& backend_options,
                                 const LaunchRole& role) const override {
    CudaBackend::Options c;
    c.device = role.distributed ? role.launch.local_rank : backend_options.device;
    c.sm_per_stage = backend_options.sm_per_stage;
    c.timing = backend_options.timing == "events" ? ActionTiming::events : ActionTiming::cupti;
    Trained<CudaBackend> trained = role.distributed
                                       ? train_as_process<CudaBackend>(options, c, role.launch)
                                       : train_in_process<CudaBackend>(options, c);
    auto report = std::make_shared<CudaBackend::Report>(std::move(trained.report));
    if (role.distributed) {
      report->partitions = fmt::format("one GPU per rank ({} processes, {})", role.launch.world_size,
                                       role.launch.launcher);
    }
    BackendRun run;
    run.where = fmt::format("cuda: {} on {}, timed with {}", report->partitions,
                            trained.result.timeline.info.device, report->timing);
    run.note = report->timing_note;
    if (!report->green && !role.distributed) {
      run.note = join_note(run.note, "no green contexts: the ranks share every SM");
    }
    if (report->dropped_records > 0) {
      run.note = join_note(run.note, fmt::format("CUPTI dropped {} records", report->dropped_records));
    }
    // Over NCCL each process has its own kernels; the reporter has only its own.
    if (report->timing == "cupti" && !role.distributed) {
      run.add_kernel_events = [report](nlohmann::json& trace) {
        cupti::append_gpu_events(trace, report->step_records, report->step_ids, report->step_origin_ns);
      };
    }
    run.clock = trained.clock;
    run.device_peak_used_bytes = report->device_peak_used_bytes;
    run.allocator_peak_bytes = report->allocator_peak_bytes;
    run.result = std::move(trained.result);
    return run;
  }

  [[nodiscard]] profiles::Profile profile(const models::Model& model, std::span<const int> sizes,
                                          const ProfilerOptions& options,
                                          const BackendOptions& backend_options,
                                          int stages) const override {
    profiler::CudaProfilerOptions c;
    c.warmup = options.warmup;
    c.repeats = options.repeats;
    c.seed = options.seed;
    c.optimizer = options.optimizer;
    c.stages = stages;
    c.sm_per_stage = backend_options.sm_per_stage;
    c.device = backend_options.device;
    c.on_partitions = [note = options.on_note](const SmPartitions& partitions) {
      if (!note) return;
      if (partitions.green()) {
        note(fmt::format("SM partitions: {} in green contexts{}; the layers run in the first",
                         cuda::describe(partitions.split(), partitions.total_sms()),
                         partitions.note().empty() ? "" : " (" + partitions.note() + ")"));
      } else {
        note(fmt::format("SM partitions: none, {}", partitions.why()));
      }
    };
    c.on_pass = options.on_pass;
    c.on_layer = options.on_layer;
    c.on_note = options.on_note;
    return profiler::profile_cuda(model, sizes, c);
  }

  [[nodiscard]] inference::ServingResult serve(const inference::ServingRequest& request,
                                              const BackendOptions& backend_options) const override {
    return run_cuda_serving(request, {.device = backend_options.device, .sm_per_stage = backend_options.sm_per_stage});
  }
};

}  // namespace

std::vector<float> CudaBackend::to_host(const Tensor& tensor, const Context& context) {
  std::vector<float> values(static_cast<std::size_t>(tensor.numel()));
  tensor.download(values, *context.stream);
  return values;
}

DeviceTensor CudaBackend::copy_of(const Tensor& tensor, const Context& context) {
  DeviceTensor copy(*context.allocator, tensor.shape(), tensor.type());
  layers::copy_device(copy.raw(), tensor.raw(), tensor.bytes(), context.stream->get());
  return copy;
}

void CudaBackend::add_into(Tensor& dst, const Tensor& src, const Context& context) {
  if (dst.shape() != src.shape()) throw std::logic_error("add_into: the two tensors differ in shape");
  layers::residual_add(dst.numel(), dst.f32(), src.f32(), dst.f32(), context.stream->get());
}

void CudaBackend::require_available() { require_device(); }

CudaBackend::Run::Run(const TrainOptions& options, const RunSettings& settings,
                      const Placement& where, const Options& backend_options)
    : settings_(settings),
      where_(where),
      backend_options_(backend_options),
      device_index_(current_device(backend_options.device)),
      memory_(device_index_) {
  const int num_ranks = settings.schedule->num_ranks;
  devices_.resize(static_cast<std::size_t>(num_ranks));
  if (where.group == nullptr) {
    partitions_ = SmPartitions::create(device_index_, num_ranks, backend_options.sm_per_stage);
    report_.green = partitions_->green();
    report_.partitions = partitions_->green()
                             ? describe(partitions_->split(), partitions_->total_sms()) +
                                   (partitions_->note().empty() ? "" : " (" + partitions_->note() + ")")
                             : fmt::format("{} plain streams sharing all {} SMs ({})", num_ranks,
                                           partitions_->total_sms(), partitions_->why());
    for (int r = 0; r < num_ranks; ++r) {
      in_context(Rank{r}, [&] {
        auto device = std::make_unique<RankDevice>(device_index_, partitions_->stream(r), memory_, false);
        device->set_thread_binding([this, r] { partitions_->bind_thread(r); });
        devices_[static_cast<std::size_t>(r)] = std::move(device);
      });
    }
    return;
  }
  // One rank per process: each replica's rank 0 makes its pipeline's NCCL ids
  // and shares them through the store.
  const int me = where.local.front().value;
  const std::string ids = where.group->share_from_rank0("gpipe/nccl_ids", me == 0 ? make_nccl_ids() : "");
  transport_ = std::make_unique<NcclTransport>(me, num_ranks, device_index_, ids,
                                               store_timeout(options.watchdog_seconds));
  process_stream_ = std::make_unique<Stream>(device_index_);
  // Replicas: the same rank of every replica reduces its stages' gradients
  // over one more communicator, whose id replica 0 makes.
  if (settings.replicas > 1) {
    const std::string group_id = where.group->share_across_replicas(
        "gpipe/nccl_data_parallel", settings.replica == 0 ? make_nccl_group_id() : "");
    reducer_ = std::make_unique<NcclGradientReducer>(settings.replica, settings.replicas, device_index_, group_id,
                                                     process_stream_->get(), models::kGradientBucketBytes,
                                                     store_timeout(options.watchdog_seconds));
  }
  devices_[static_cast<std::size_t>(me)] =
      std::make_unique<RankDevice>(device_index_, *process_stream_, memory_, true);
}

void CudaBackend::Run::weights_ready() {
  for (const Rank r : where_.local) device(r).compute().synchronize();
  // Collection starts once the weights are on the GPU: their upload is not measured.
  timing_ = make_run_timing(backend_options_.timing, settings_.schedule->num_ranks,
                            settings_.measured_steps);
  report_.timing = timing_.timer().name();
  report_.timing_note = timing_.note;
  for (const Rank r : where_.local) timing_.timer().set_compute_stream(r, device(r).compute().get());
  const MessageShapes shapes(*settings_.model, settings_.microbatch_sizes);
  if (transport_) {
    link_ = std::make_unique<NcclDeviceLink>(*transport_, device(where_.local.front()), shapes,
                                             &timing_.timer());
  } else {
    std::vector<RankDevice*> devices;
    for (const auto& d : devices_) devices.push_back(d.get());
    link_ = std::make_unique<InProcessDeviceLink>(std::move(devices), shapes, &timing_.timer());
  }
}

void CudaBackend::Run::finish() {
  if (transport_) transport_->synchronize();
  GPIPE_CUDA_CHECK(cudaDeviceSynchronize());
  if (timing_.cupti) timing_.cupti->finish();
}

void CudaBackend::Run::abandon() noexcept {
  // The run's error is the one to report: a failure to stop CUPTI after a
  // failed run (a sticky device error) must not replace it.
  try {
    if (timing_.cupti) timing_.cupti->finish();
  } catch (...) {
  }
}

std::string CudaBackend::Run::device_name() const { return cuda::device_name(device_index_); }

CudaBackend::Report CudaBackend::Run::report(int median_slot) {
  Report out = report_;
  for (const Rank r : where_.local) {
    CachingAllocator& allocator = device(r).allocator();
    out.allocator_peak_bytes.push_back(allocator.stats().peak_requested_bytes);
    out.device_peak_used_bytes = std::max(out.device_peak_used_bytes, allocator.device_peak_used_bytes());
  }
  if (timing_.cupti) {
    out.step_ids = timing_.cupti->ids(median_slot);
    out.step_origin_ns = timing_.cupti->origin_ns(median_slot);
    out.step_records = records_of(timing_.cupti->records(), out.step_ids);
    out.dropped_records = timing_.cupti->records().dropped;
  }
  return out;
}

const Backend& cuda_backend() {
  static const CudaEntry entry;
  return entry;
}

}  // namespace gpipe::exec::cuda
