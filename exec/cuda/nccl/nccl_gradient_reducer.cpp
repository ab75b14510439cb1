#include "exec/cuda/nccl/nccl_gradient_reducer.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/runtime/aborted.hpp"
#include "exec/runtime/reduction_pieces.hpp"

namespace gpipe::exec::cuda {

std::string make_nccl_group_id() {
  ncclUniqueId id;
  GPIPE_NCCL_CHECK(ncclGetUniqueId(&id));
  std::string out(NCCL_UNIQUE_ID_BYTES, '\0');
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

NcclGradientReducer::NcclGradientReducer(int rank, int size, int device, const std::string& id,
                                         cudaStream_t compute, std::int64_t bucket_bytes,
                                         std::chrono::milliseconds join_timeout)
    : rank_(rank),
      size_(size),
      compute_(compute),
      bucket_floats_(float_bucket(bucket_bytes)) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw InputError("NCCL gradient reducer: rank " + std::to_string(rank) + " is outside [0, " +
                     std::to_string(size) + ")");
  }
  if (id.size() != NCCL_UNIQUE_ID_BYTES) {
    throw InputError("NCCL gradient reducer: the shared id has " + std::to_string(id.size()) + " bytes, expected " +
                     std::to_string(NCCL_UNIQUE_ID_BYTES));
  }
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof(unique));
  use_device(device);
  GPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const auto deadline = std::chrono::steady_clock::now() + join_timeout;
  try {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t state = ncclCommInitRankConfig(&comm_, size_, unique, rank_, &config);
    if (state != ncclSuccess && state != ncclInProgress) {
      throw RunError(std::string("NCCL gradient reducer: joining the group failed: ") + ncclGetErrorString(state));
    }
    while (state == ncclInProgress) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw RunError("NCCL gradient reducer: rank " + std::to_string(rank_) + ": the data-parallel group did not "
                       "form in time");
      }
      std::this_thread::yield();
      GPIPE_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    }
    if (state != ncclSuccess) {
      throw RunError(std::string("NCCL gradient reducer: joining the group failed: ") + ncclGetErrorString(state));
    }
  } catch (...) {
    if (comm_ != nullptr) (void)ncclCommAbort(comm_);
    (void)cudaStreamDestroy(stream_);
    throw;
  }
}

NcclGradientReducer::~NcclGradientReducer() {
  for (auto& [stage, p] : pending_) {
    if (p.done != nullptr) (void)cudaEventDestroy(p.done);
  }
  if (comm_ != nullptr) {
    if (aborted_ || abort_requested_) {
      (void)ncclCommAbort(comm_);
    } else {
      (void)cudaStreamSynchronize(stream_);
      (void)ncclCommFinalize(comm_);
      ncclResult_t state = ncclInProgress;
      while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress) std::this_thread::yield();
      (void)ncclCommDestroy(comm_);
    }
  }
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void NcclGradientReducer::throw_if_aborted() {
  if (!abort_requested_.load(std::memory_order_acquire)) return;
  if (!aborted_) {
    aborted_ = true;
    (void)ncclCommAbort(comm_);  // ends what is queued or blocked on the stream
    comm_ = nullptr;
  }
  throw Aborted();
}

void NcclGradientReducer::poll_once() {
  throw_if_aborted();
  ncclResult_t async = ncclSuccess;
  GPIPE_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclSuccess && async != ncclInProgress) {
    throw RunError(std::string("NCCL gradient reducer: a reduction failed: ") + ncclGetErrorString(async));
  }
  std::this_thread::yield();
}

void NcclGradientReducer::complete(ncclResult_t issued, const char* what) {
  if (issued != ncclSuccess && issued != ncclInProgress) {
    throw RunError(std::string("NCCL gradient reducer: ") + what + " failed: " + ncclGetErrorString(issued));
  }
  ncclResult_t state = issued;
  while (state == ncclInProgress) {
    throw_if_aborted();
    std::this_thread::yield();
    GPIPE_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
  }
  if (state != ncclSuccess) {
    throw RunError(std::string("NCCL gradient reducer: ") + what + " failed: " + ncclGetErrorString(state));
  }
}

void NcclGradientReducer::start(schedules::Stage stage, std::vector<DeviceTensor*> gradients) {
  throw_if_aborted();
  if (pending_.contains(stage.value)) {
    throw std::logic_error("stage " + std::to_string(stage.value) + ": a second reduction before the first was awaited");
  }
  Pending& p = pending_[stage.value];
  p.start = Clock::now();
  // The gradients are final once the compute stream gets here.
  cudaEvent_t ready = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(ready, compute_));
  GPIPE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  GPIPE_CUDA_CHECK(cudaEventDestroy(ready));
  std::vector<std::int64_t> sizes;
  for (const DeviceTensor* g : gradients) {
    if (g->type() != DeviceType::f32) throw std::logic_error("NCCL gradient reducer: a gradient that is not fp32");
    sizes.push_back(g->numel());
  }
  complete(ncclGroupStart(), "ncclGroupStart");
  for (const ReductionPiece& piece : reduction_pieces(sizes, bucket_floats_)) {
    float* values = static_cast<float*>(gradients[piece.tensor]->raw()) + piece.first;
    complete(ncclAllReduce(values, values, static_cast<std::size_t>(piece.count), ncclFloat32, ncclSum, comm_, stream_),
             "ncclAllReduce of a stage's gradients");
  }
  complete(ncclGroupEnd(), "ncclGroupEnd");
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(p.done, stream_));
}

bool NcclGradientReducer::test(Pending& p) {
  if (p.ended) return true;
  const cudaError_t state = cudaEventQuery(p.done);
  if (state == cudaErrorNotReady) return false;
  GPIPE_CUDA_CHECK(state);
  p.end = Clock::now();
  p.ended = true;
  return true;
}

void NcclGradientReducer::progress() {
  for (auto& [stage, p] : pending_) test(p);
}

GradientReducer<DeviceTensor>::Times NcclGradientReducer::wait(schedules::Stage stage) {
  const auto found = pending_.find(stage.value);
  if (found == pending_.end()) {
    throw std::logic_error("stage " + std::to_string(stage.value) + ": WAIT_REDUCE_GRAD without its REDUCE_GRAD");
  }
  Pending& p = found->second;
  // The STEP's kernels, queued next on the compute stream, read the sums.
  GPIPE_CUDA_CHECK(cudaStreamWaitEvent(compute_, p.done, 0));
  while (!test(p)) poll_once();
  const Times times{p.start, p.end};
  GPIPE_CUDA_CHECK(cudaEventDestroy(p.done));
  pending_.erase(found);
  return times;
}

void NcclGradientReducer::sum_in_place(DeviceTensor& tensor) {
  throw_if_aborted();
  if (tensor.type() != DeviceType::f32) throw std::logic_error("NCCL gradient reducer: a gradient that is not fp32");
  cudaEvent_t ready = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(ready, compute_));
  GPIPE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  GPIPE_CUDA_CHECK(cudaEventDestroy(ready));
  complete(ncclAllReduce(tensor.raw(), tensor.raw(), static_cast<std::size_t>(tensor.numel()), ncclFloat32, ncclSum,
                         comm_, stream_),
           "ncclAllReduce of a tied gradient");
  cudaEvent_t done = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(done, stream_));
  GPIPE_CUDA_CHECK(cudaStreamWaitEvent(compute_, done, 0));
  GPIPE_CUDA_CHECK(cudaEventDestroy(done));
}

double NcclGradientReducer::sum(double value) {
  throw_if_aborted();
  double* device = nullptr;
  GPIPE_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&device), sizeof(double), stream_));
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(device, &value, sizeof(double), cudaMemcpyHostToDevice, stream_));
  complete(ncclAllReduce(device, device, 1, ncclFloat64, ncclSum, comm_, stream_), "ncclAllReduce of the loss");
  double total = 0;
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(&total, device, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  GPIPE_CUDA_CHECK(cudaFreeAsync(device, stream_));
  // Polled, not synchronized: a peer that never comes must not hang the host.
  cudaEvent_t done = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(done, stream_));
  cudaError_t state = cudaErrorNotReady;
  while ((state = cudaEventQuery(done)) == cudaErrorNotReady) poll_once();
  (void)cudaEventDestroy(done);
  GPIPE_CUDA_CHECK(state);
  return total;
}

}  // namespace gpipe::exec::cuda
