#include "exec/cuda/nccl/nccl_transport.hpp"

#include <cstring>

#include "exec/aborted.hpp"
#include "exec/cuda/check.hpp"
#include "schedules/error.hpp"

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

NcclTransport::NcclTransport(int rank, int world_size, int device, const std::string& ids)
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
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  try {
    for (Channel* c : {&activations_, &gradients_}) {
      GPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    }
    GPIPE_NCCL_CHECK(ncclCommInitRank(&activations_.comm, world_size_, unique[0], rank_));
    GPIPE_NCCL_CHECK(ncclCommInitRank(&gradients_.comm, world_size_, unique[1], rank_));
  } catch (...) {
    abort();
    for (Channel* c : {&activations_, &gradients_}) {
      if (c->stream != nullptr) (void)cudaStreamDestroy(c->stream);
    }
    throw;
  }
}

NcclTransport::~NcclTransport() {
  (void)cudaSetDevice(device_);
  for (Channel* c : {&activations_, &gradients_}) {
    if (c->comm != nullptr && !aborted_) {
      (void)cudaStreamSynchronize(c->stream);
      (void)ncclCommDestroy(c->comm);
    }
    if (c->stream != nullptr) (void)cudaStreamDestroy(c->stream);
  }
}

NcclTransport::Channel& NcclTransport::channel(MessageKind kind) {
  return kind == MessageKind::activation ? activations_ : gradients_;
}

void NcclTransport::check_peer(schedules::Rank peer, const MessageTag& tag, const char* what) const {
  if (peer.value < 0 || peer.value >= world_size_ || peer.value == rank_) {
    throw InputError(std::string("NCCL transport: ") + what + " " + describe(tag) + " names rank " +
                     std::to_string(peer.value) + " (this is rank " + std::to_string(rank_) +
                     " of " + std::to_string(world_size_) + ")");
  }
}

void NcclTransport::send(schedules::Rank to, const MessageTag& tag, const void* data,
                         std::size_t bytes, cudaStream_t producer) {
  if (aborted_) throw Aborted();
  check_peer(to, tag, "send of");
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  Channel& c = channel(tag.kind);
  order_after(c.stream, producer);  // the data is ready
  GPIPE_NCCL_CHECK(ncclSend(data, bytes, ncclUint8, to.value, c.comm, c.stream));
  order_after(producer, c.stream);  // the buffer is free again
}

void NcclTransport::receive(schedules::Rank from, const MessageTag& tag, void* data,
                            std::size_t bytes, cudaStream_t consumer) {
  if (aborted_) throw Aborted();
  check_peer(from, tag, "receive of");
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  Channel& c = channel(tag.kind);
  // The buffer may still be read by earlier work of the consumer.
  order_after(c.stream, consumer);
  GPIPE_NCCL_CHECK(ncclRecv(data, bytes, ncclUint8, from.value, c.comm, c.stream));
  order_after(consumer, c.stream);
}

void NcclTransport::synchronize() {
  if (aborted_) throw Aborted();
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  for (Channel* c : {&activations_, &gradients_}) GPIPE_CUDA_CHECK(cudaStreamSynchronize(c->stream));
  check_async_error();
}

void NcclTransport::abort() {
  if (aborted_.exchange(true)) return;
  // ncclCommAbort also ends operations still queued or blocked on the streams.
  for (Channel* c : {&activations_, &gradients_}) {
    if (c->comm != nullptr) (void)ncclCommAbort(c->comm);
  }
}

void NcclTransport::check_async_error() const {
  for (const Channel* c : {&activations_, &gradients_}) {
    if (c->comm == nullptr) continue;
    ncclResult_t async = ncclSuccess;
    GPIPE_NCCL_CHECK(ncclCommGetAsyncError(c->comm, &async));
    if (async != ncclSuccess) {
      throw RunError(std::string("NCCL transport: rank ") + std::to_string(rank_) +
                     " communication failed: " + ncclGetErrorString(async));
    }
  }
}

}  // namespace gpipe::exec::cuda
