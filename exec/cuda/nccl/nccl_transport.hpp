// DeviceTransport over NCCL point-to-point (ncclSend/ncclRecv), one process
// per rank. Activations and gradients each get their own communicator and
// communication stream: on one stream, rank r's send of an activation could
// wait behind its receive of a gradient that rank r+1 only sends after it
// gets that activation. Within one kind, data flows one way along the
// pipeline, so issue order is consistent and cannot deadlock.
//
// Bootstrap: rank 0 makes the ids (make_nccl_ids) and shares the string with
// every rank (exec/tcp_store); every rank then constructs NcclTransport.
#pragma once

#include <atomic>
#include <string>

#include <nccl.h>

#include "exec/cuda/nccl/device_transport.hpp"

namespace gpipe::exec::cuda {

// The communicators' unique ids, serialized (2 x NCCL_UNIQUE_ID_BYTES bytes).
[[nodiscard]] std::string make_nccl_ids();
[[nodiscard]] constexpr std::size_t nccl_ids_bytes() { return 2 * NCCL_UNIQUE_ID_BYTES; }

class NcclTransport final : public DeviceTransport {
 public:
  // Binds `device` and joins both communicators (blocks until all
  // `world_size` ranks join). Throws InputError for a malformed rank or ids,
  // RunError when NCCL fails.
  NcclTransport(int rank, int world_size, int device, const std::string& ids);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  void send(schedules::Rank to, const MessageTag& tag, const void* data, std::size_t bytes,
            cudaStream_t producer) override;
  void receive(schedules::Rank from, const MessageTag& tag, void* data, std::size_t bytes,
               cudaStream_t consumer) override;
  void synchronize() override;
  void abort() override;

  // Throws RunError if NCCL reported an asynchronous error (a peer failed).
  void check_async_error() const;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int world_size() const { return world_size_; }

 private:
  struct Channel {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
  };
  [[nodiscard]] Channel& channel(MessageKind kind);
  void check_peer(schedules::Rank peer, const MessageTag& tag, const char* what) const;

  int rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
  Channel activations_;
  Channel gradients_;
  std::atomic<bool> aborted_{false};
};

}  // namespace gpipe::exec::cuda
