#include "exec/cuda/nccl/nccl_transport.hpp"

#include <cstring>
#include <thread>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/runtime/aborted.hpp"

namespace gpipe::exec::cuda {

namespace {

// exec::to_string(MessageTag) lives in gpipe_exec, which links after this
// library: spell the tag here.
std::string describe(const MessageTag& tag) {
  return std::string(tag.kind == MessageKind::activation ? "activation" : "gradient") +
         " of stage " + std::to_string(tag.stage.value) + " micro-batch " +
         std::to_string(tag.microbatch.value) + " (step " + std::to_string(tag.step) + ")";
}

// Makes `waiter` wait for the work queued on `signaller` so far.
void order_after(cudaStream_t waiter, cudaStream_t signaller) {
  cudaEvent_t event = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  GPIPE_CUDA_CHECK(cudaEventRecord(event, signaller));
  GPIPE_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  GPIPE_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait is done
}

}  // namespace

std::string make_nccl_ids() {
  ncclUniqueId ids[2];
  GPIPE_NCCL_CHECK(ncclGetUniqueId(&ids[0]));
  GPIPE_NCCL_CHECK(ncclGetUniqueId(&ids[1]));
  std::string out(nccl_ids_bytes(), '\0');
  std::memcpy(out.data(), ids, sizeof(ids));
  return out;
}

NcclTransport::NcclTransport(int rank, int world_size, int device, const std::string& ids,
                             std::chrono::milliseconds join_timeout)
    : rank_(rank), world_size_(world_size), device_(device) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw InputError("NCCL transport: rank " + std::to_string(rank) + " is outside [0, " +
                     std::to_string(world_size) + ")");
  }
  if (ids.size() != nccl_ids_bytes()) {
    throw InputError("NCCL transport: the shared ids have " + std::to_string(ids.size()) +
                     " bytes, expected " + std::to_string(nccl_ids_bytes()));
  }
  ncclUniqueId unique[2];
  std::memcpy(unique, ids.data(), sizeof(unique));
  use_device(device_);
  const auto deadline = std::chrono::steady_clock::now() + join_timeout;
  try {
    for (Channel* c : {&activations_, &gradients_}) {
      GPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    }
    int index = 0;
    for (Channel* c : {&activations_, &gradients_}) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;  // every call returns at once; complete() polls it
      const ncclResult_t issued = ncclCommInitRankConfig(&c->comm, world_size_, unique[index++], rank_, &config);
      complete(c->comm, issued, "ncclCommInitRankConfig (joining the other ranks)", deadline);
    }
  } catch (...) {
    for (Channel* c : {&activations_, &gradients_}) {
      if (c->comm != nullptr) (void)ncclCommAbort(c->comm);
      c->comm = nullptr;
      if (c->stream != nullptr) (void)cudaStreamDestroy(c->stream);
      c->stream = nullptr;
    }
    throw;
  }
}

NcclTransport::~NcclTransport() {
  for (Channel* c : {&activations_, &gradients_}) {
    if (c->comm != nullptr) {
      if (aborted_ || abort_requested_) {
        (void)ncclCommAbort(c->comm);
      } else {
        (void)cudaStreamSynchronize(c->stream);
        (void)ncclCommFinalize(c->comm);
        // Non-blocking: finalize completes asynchronously; wait for it before destroying.
        ncclResult_t state = ncclInProgress;
        while (ncclCommGetAsyncError(c->comm, &state) == ncclSuccess && state == ncclInProgress) {
          std::this_thread::yield();
        }
        (void)ncclCommDestroy(c->comm);
      }
    }
    if (c->stream != nullptr) (void)cudaStreamDestroy(c->stream);
  }
}

NcclTransport::Channel& NcclTransport::channel(MessageKind kind) {
  return kind == MessageKind::activation ? activations_ : gradients_;
}

const NcclTransport::Channel& NcclTransport::channel(MessageKind kind) const {
  return kind == MessageKind::activation ? activations_ : gradients_;
}

void NcclTransport::check_peer(schedules::Rank peer, const MessageTag& tag, const char* what) const {
  if (peer.value < 0 || peer.value >= world_size_ || peer.value == rank_) {
    throw InputError(std::string("NCCL transport: ") + what + " " + describe(tag) + " names rank " +
                     std::to_string(peer.value) + " (this is rank " + std::to_string(rank_) +
                     " of " + std::to_string(world_size_) + ")");
  }
}

void NcclTransport::complete(ncclComm_t comm, ncclResult_t issued, const std::string& what,
                             std::chrono::steady_clock::time_point deadline) {
  if (issued != ncclSuccess && issued != ncclInProgress) {
    throw RunError("NCCL transport: rank " + std::to_string(rank_) + ": " + what + " failed: " +
                   ncclGetErrorString(issued));
  }
  ncclResult_t state = issued;
  while (state == ncclInProgress) {
    if (abort_requested_.load(std::memory_order_acquire)) {
      finish_abort();
      throw Aborted();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw RunError("NCCL transport: rank " + std::to_string(rank_) + ": " + what + " did not complete in time");
    }
    std::this_thread::yield();
    GPIPE_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
  }
  if (state != ncclSuccess) {
    throw RunError("NCCL transport: rank " + std::to_string(rank_) + ": " + what + " failed: " +
                   ncclGetErrorString(state));
  }
}

cudaStream_t NcclTransport::send(schedules::Rank to, const MessageTag& tag, const void* data,
                                 std::size_t bytes, cudaStream_t producer) {
  if (abort_requested_ || aborted_) throw Aborted();
  check_peer(to, tag, "send of");
  Channel& c = channel(tag.kind);
  order_after(c.stream, producer);  // the data is ready
  complete(c.comm, ncclSend(data, bytes, ncclUint8, to.value, c.comm, c.stream), "ncclSend of the " + describe(tag));
  return c.stream;
}

void NcclTransport::receive(schedules::Rank from, const MessageTag& tag, void* data, std::size_t bytes) {
  if (abort_requested_ || aborted_) throw Aborted();
  check_peer(from, tag, "receive of");
  Channel& c = channel(tag.kind);
  complete(c.comm, ncclRecv(data, bytes, ncclUint8, from.value, c.comm, c.stream),
           "ncclRecv of the " + describe(tag));
}

cudaStream_t NcclTransport::receive_stream(MessageKind kind) const { return channel(kind).stream; }

void NcclTransport::synchronize() {
  if (abort_requested_ || aborted_) throw Aborted();
  for (Channel* c : {&activations_, &gradients_}) GPIPE_CUDA_CHECK(cudaStreamSynchronize(c->stream));
  check_async_error();
}

void NcclTransport::abort() { abort_requested_.store(true, std::memory_order_release); }

void NcclTransport::finish_abort() {
  if (aborted_) return;
  aborted_ = true;
  abort_requested_ = true;
  // ncclCommAbort also ends operations still queued or blocked on the streams.
  for (Channel* c : {&activations_, &gradients_}) {
    if (c->comm != nullptr) (void)ncclCommAbort(c->comm);
    c->comm = nullptr;
  }
}

void NcclTransport::check_async_error() const {
  for (const Channel* c : {&activations_, &gradients_}) {
    if (c->comm == nullptr) continue;
    ncclResult_t async = ncclSuccess;
    GPIPE_NCCL_CHECK(ncclCommGetAsyncError(c->comm, &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      throw RunError(std::string("NCCL transport: rank ") + std::to_string(rank_) +
                     " communication failed: " + ncclGetErrorString(async));
    }
  }
}

}  // namespace gpipe::exec::cuda
