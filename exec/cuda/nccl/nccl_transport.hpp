// DeviceTransport over NCCL point-to-point (ncclSend/ncclRecv), one process
// per rank. Activations and gradients each get their own communicator and
// communication stream: on one stream, rank r's send of an activation could
// wait behind its receive of a gradient that rank r+1 only sends after it
// gets that activation. Within one kind, data flows one way along the
// pipeline, so issue order is consistent and cannot deadlock. Neither end's
// compute stream ever waits for the other end: the sender's stream is only
// read from (the send waits for it), the receiver's only signalled.
//
// The communicators are non-blocking (ncclConfig_t blocking = 0): every call
// returns at once and is polled to completion, so a peer that never joins or
// never sends cannot hang the host; abort() (from any thread, e.g. the
// watchdog) is seen by that polling, and the issuing thread then aborts the
// communicators itself, as NCCL requires one thread per communicator at a time.
//
// Bootstrap: rank 0 makes the ids (make_nccl_ids) and shares the string with
// every rank (exec/tcp_store); every rank then constructs NcclTransport.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include <nccl.h>

#include "exec/cuda/nccl/device_transport.hpp"

namespace gpipe::exec::cuda {

// The communicators' unique ids, serialized (2 x NCCL_UNIQUE_ID_BYTES bytes).
[[nodiscard]] std::string make_nccl_ids();
[[nodiscard]] constexpr std::size_t nccl_ids_bytes() { return 2 * NCCL_UNIQUE_ID_BYTES; }

class NcclTransport final : public DeviceTransport {
 public:
  // Binds `device` and joins both communicators, waiting at most `join_timeout`
  // for every rank to join. Throws InputError for a malformed rank or ids,
  // RunError when NCCL fails or the ranks do not all join in time.
  NcclTransport(int rank, int world_size, int device, const std::string& ids,
                std::chrono::milliseconds join_timeout = std::chrono::minutes(5));
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  cudaStream_t send(schedules::Rank to, const MessageTag& tag, const void* data, std::size_t bytes,
                    cudaStream_t producer) override;
  void receive(schedules::Rank from, const MessageTag& tag, void* data, std::size_t bytes) override;
  [[nodiscard]] cudaStream_t receive_stream(MessageKind kind) const override;
  void synchronize() override;
  void abort() override;
  void finish_abort() override;

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
  [[nodiscard]] const Channel& channel(MessageKind kind) const;
  void check_peer(schedules::Rank peer, const MessageTag& tag, const char* what) const;
  // Polls `comm` until its last call has completed; throws Aborted (after
  // aborting the communicators) when abort() was asked for meanwhile, and
  // RunError naming `what` when NCCL fails or `deadline` passes.
  void complete(ncclComm_t comm, ncclResult_t issued, const std::string& what,
                std::chrono::steady_clock::time_point deadline =
                    std::chrono::steady_clock::time_point::max());

  int rank_ = 0;
  int world_size_ = 1;
  int device_ = 0;
  Channel activations_;
  Channel gradients_;
  std::atomic<bool> abort_requested_{false};
  bool aborted_ = false;  // the communicators are aborted (by the issuing thread)
};

}  // namespace gpipe::exec::cuda
