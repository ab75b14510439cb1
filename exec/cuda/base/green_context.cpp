#include "exec/cuda/base/green_context.hpp"

#include <algorithm>
#include <utility>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"

namespace gpipe::exec::cuda {

namespace {

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

SmGranularity effective_granularity(SmGranularity reported, int compute_capability_major) {
  if (compute_capability_major < 9) return reported;
  return SmGranularity{std::max(reported.min_partition_sms, kHopperGranularity.min_partition_sms),
                       std::max(reported.alignment_sms, kHopperGranularity.alignment_sms)};
}

SmSplit plan_sm_split(int total_sms, int stages, int sm_per_stage, SmGranularity granularity) {
  if (total_sms <= 0) throw RunError(fmt::format("the device reports {} SMs", total_sms));
  if (stages < 1) throw InputError(fmt::format("--stages {}: need at least one stage", stages));
  if (sm_per_stage < 0) throw InputError(fmt::format("--sm-per-stage {}: must not be negative", sm_per_stage));
  const int alignment = std::max(1, granularity.alignment_sms);
  // The smallest partition the driver makes, itself a multiple of the alignment.
  const int minimum = round_up(std::max(granularity.min_partition_sms, alignment), alignment);
  const int max_stages = total_sms / minimum;

  SmSplit split{stages, 0, sm_per_stage, 0};
  if (sm_per_stage == 0) {
    split.sms_per_stage = total_sms / stages / alignment * alignment;
    if (split.sms_per_stage < minimum) {
      throw InputError(fmt::format(
          "--stages {}: {} SM partitions of at least {} SMs (multiples of {}) do not fit in the device's {} SMs; "
          "at most {} stages get one each",
          stages, stages, minimum, alignment, total_sms, max_stages));
    }
  } else {
    split.sms_per_stage = std::max(round_up(sm_per_stage, alignment), minimum);
    if (static_cast<long long>(split.sms_per_stage) * stages > total_sms) {
      throw InputError(fmt::format(
          "--sm-per-stage {}: {} partitions of {} SMs (at least {}, a multiple of {}) need {} SMs, the device has {}",
          sm_per_stage, stages, split.sms_per_stage, minimum, alignment,
          static_cast<long long>(split.sms_per_stage) * stages, total_sms));
    }
  }
  split.unused_sms = total_sms - split.sms_per_stage * stages;
  return split;
}

std::string describe(const SmSplit& split, int total_sms) {
  std::string text = fmt::format("{} partitions of {} SMs ({} of {} unused)", split.stages, split.sms_per_stage,
                                 split.unused_sms, total_sms);
  if (split.requested_sms != 0 && split.requested_sms != split.sms_per_stage) {
    text += fmt::format(", --sm-per-stage {} rounded up to {}", split.requested_sms, split.sms_per_stage);
  }
  return text;
}

// The driver entry points and the green contexts made with them.
struct SmPartitions::GreenContexts {
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetDevResource_v12040 device_get_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split_by_count = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 generate_desc = nullptr;
  PFN_cuGreenCtxCreate_v12040 create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create = nullptr;
  PFN_cuCtxFromGreenCtx_v12040 as_context = nullptr;
  PFN_cuCtxGetCurrent_v4000 get_current = nullptr;
  PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
  std::vector<CUgreenCtx> contexts;
  std::vector<CUcontext> as_contexts;  // each green context as a CUcontext, to make current

  ~GreenContexts() {
    if (destroy == nullptr) return;
    for (CUgreenCtx context : contexts) (void)destroy(context);
  }
};

namespace {

// A driver call that failed: the caller falls back to plain streams.
struct Unavailable {
  std::string why;
};

template <typename Function>
void load(Function& function, const char* symbol, unsigned version) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status = cudaGetDriverEntryPointByVersion(symbol, &pointer, version, cudaEnableDefault, &found);
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || pointer == nullptr) {
    (void)cudaGetLastError();
    throw Unavailable{fmt::format("the driver has no {} (CUDA {}.{} API)", symbol, version / 1000, version % 1000 / 10)};
  }
  function = reinterpret_cast<Function>(pointer);
}

void check(PFN_cuGetErrorName_v6000 name, CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (name == nullptr || name(status, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown CUresult";
  throw Unavailable{fmt::format("{} returned {}", call, text)};
}

}  // namespace

SmPartitions SmPartitions::create(int device, int stages, int sm_per_stage) {
  if (stages < 1) throw InputError(fmt::format("--stages {}: need at least one stage", stages));
  GPIPE_CUDA_CHECK(cudaSetDevice(device));
  GPIPE_CUDA_CHECK(cudaFree(nullptr));  // the primary context first, as cuGreenCtxCreate advises
  SmPartitions partitions;
  GPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&partitions.total_sms_, cudaDevAttrMultiProcessorCount, device));

  auto driver = std::make_unique<GreenContexts>();
  try {
    load(driver->get_error_name, "cuGetErrorName", 6000);
    load(driver->device_get, "cuDeviceGet", 2000);
    load(driver->device_get_resource, "cuDeviceGetDevResource", 12040);
    load(driver->split_by_count, "cuDevSmResourceSplitByCount", 12040);
    load(driver->generate_desc, "cuDevResourceGenerateDesc", 12040);
    load(driver->create, "cuGreenCtxCreate", 12040);
    load(driver->destroy, "cuGreenCtxDestroy", 12040);
    load(driver->stream_create, "cuGreenCtxStreamCreate", 12050);
    load(driver->as_context, "cuCtxFromGreenCtx", 12040);
    load(driver->get_current, "cuCtxGetCurrent", 4000);
    load(driver->set_current, "cuCtxSetCurrent", 4000);
    const PFN_cuGetErrorName_v6000 name = driver->get_error_name;

    CUdevice handle = 0;
    check(name, driver->device_get(&handle, device), "cuDeviceGet");
    CUdevResource all{};
    check(name, driver->device_get_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM),
          "cuDeviceGetDevResource(SM)");
    partitions.total_sms_ = static_cast<int>(all.sm.smCount);
    const SmGranularity granularity = effective_granularity(
        SmGranularity{static_cast<int>(all.sm.minSmPartitionSize), static_cast<int>(all.sm.smCoscheduledAlignment)},
        compute_capability_major(device));
    // Bad input (the split does not fit) is the caller's error, not a reason to fall back.
    partitions.split_ = plan_sm_split(partitions.total_sms_, stages, sm_per_stage, granularity);

    std::vector<CUdevResource> groups(static_cast<std::size_t>(stages));
    auto made = static_cast<unsigned>(stages);
    CUdevResource remaining{};
    check(name,
          driver->split_by_count(groups.data(), &made, &all, &remaining, 0,
                                 static_cast<unsigned>(partitions.split_.sms_per_stage)),
          "cuDevSmResourceSplitByCount");
    if (made < static_cast<unsigned>(stages)) {
      throw Unavailable{fmt::format("cuDevSmResourceSplitByCount made {} groups of {} SMs, not {}", made,
                                    partitions.split_.sms_per_stage, stages)};
    }
    // The driver may round further than the documented granularity: use,
    // and say, what it made.
    const int made_sms = static_cast<int>(groups[0].sm.smCount);
    if (made_sms != partitions.split_.sms_per_stage) {
      partitions.note_ = fmt::format("the driver made partitions of {} SMs where {} were planned", made_sms,
                                     partitions.split_.sms_per_stage);
    }
    partitions.split_.sms_per_stage = made_sms;
    partitions.split_.unused_sms = partitions.total_sms_ - partitions.split_.sms_per_stage * stages;

    for (CUdevResource& group : groups) {
      CUdevResourceDesc description = nullptr;
      check(name, driver->generate_desc(&description, &group, 1), "cuDevResourceGenerateDesc");
      CUgreenCtx context = nullptr;
      check(name, driver->create(&context, description, handle, CU_GREEN_CTX_DEFAULT_STREAM),
            "cuGreenCtxCreate");
      driver->contexts.push_back(context);
      CUcontext as_context = nullptr;
      check(name, driver->as_context(&as_context, context), "cuCtxFromGreenCtx");
      driver->as_contexts.push_back(as_context);
      CUstream stream = nullptr;
      check(name, driver->stream_create(&stream, context, CU_STREAM_NON_BLOCKING, 0),
            "cuGreenCtxStreamCreate");
      partitions.streams_.push_back(Stream::adopt(stream, device));
    }
    partitions.contexts_ = std::move(driver);
    partitions.green_ = true;
  } catch (const Unavailable& failure) {
    partitions.streams_.clear();  // streams before the contexts they belong to
    driver.reset();
    partitions.split_ = SmSplit{stages, 0, sm_per_stage, 0};
    partitions.why_ = fmt::format("green contexts unavailable ({}): the {} stages share all {} SMs on plain streams",
                                  failure.why, stages, partitions.total_sms_);
    for (int stage = 0; stage < stages; ++stage) partitions.streams_.emplace_back(device);
  }
  return partitions;
}

void SmPartitions::bind_thread(int stage) const {
  if (!green_) return;
  const CUresult status = contexts_->set_current(contexts_->as_contexts.at(static_cast<std::size_t>(stage)));
  if (status != CUDA_SUCCESS) {
    throw RunError(fmt::format("cuCtxSetCurrent of the green context of stage {} failed ({})", stage,
                               static_cast<int>(status)));
  }
}

SmPartitions::ThreadBinding::ThreadBinding(const SmPartitions& partitions, int stage)
    : partitions_(partitions.green_ ? &partitions : nullptr) {
  if (partitions_ == nullptr) return;
  CUcontext current = nullptr;
  if (partitions_->contexts_->get_current(&current) != CUDA_SUCCESS) {
    throw RunError("cuCtxGetCurrent failed");
  }
  previous_ = current;
  partitions_->bind_thread(stage);
}

SmPartitions::ThreadBinding::~ThreadBinding() {
  if (partitions_ != nullptr) (void)partitions_->contexts_->set_current(static_cast<CUcontext>(previous_));
}

SmPartitions::~SmPartitions() { destroy(); }

SmPartitions::SmPartitions(SmPartitions&& other) noexcept
    : streams_(std::move(other.streams_)),
      contexts_(std::move(other.contexts_)),
      green_(std::exchange(other.green_, false)),
      why_(std::move(other.why_)),
      note_(std::move(other.note_)),
      split_(other.split_),
      total_sms_(other.total_sms_) {}

SmPartitions& SmPartitions::operator=(SmPartitions&& other) noexcept {
  if (this != &other) {
    destroy();
    streams_ = std::move(other.streams_);
    contexts_ = std::move(other.contexts_);
    green_ = std::exchange(other.green_, false);
    why_ = std::move(other.why_);
    note_ = std::move(other.note_);
    split_ = other.split_;
    total_sms_ = other.total_sms_;
  }
  return *this;
}

void SmPartitions::destroy() noexcept {
  streams_.clear();
  contexts_.reset();
}

}  // namespace gpipe::exec::cuda
