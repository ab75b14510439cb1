// How ranks in separate processes exchange device buffers: the device-side
// counterpart of exec::Transport. exec::Transport does not fit here: it moves
// host Tensors (ownership passes through the call), names both ends because
// one process hosts every rank, and matches messages by tag in any order.
// Over NCCL, this process is one rank, the buffers are device memory the
// caller owns and sizes (the receiver knows each message's shape from the
// plan), the work is ordered on CUDA streams instead of blocking the host,
// and point-to-point messages between two ranks match in issue order, not by
// tag: both ranks must issue their sends and receives of one kind in the same
// order (the schedule's order does this). The tag names the message in errors.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "exec/transport.hpp"

namespace gpipe::exec::cuda {

class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;

  // Sends `bytes` at device pointer `data` to rank `to` once the work already
  // queued on `producer` is done; later work on `producer` waits until the
  // send has finished reading `data`. Returns without waiting. Throws
  // Aborted after abort().
  virtual void send(schedules::Rank to, const MessageTag& tag, const void* data,
                    std::size_t bytes, cudaStream_t producer) = 0;

  // Receives `bytes` from rank `from` into device pointer `data`; later work
  // on `consumer` waits for the data. Returns without waiting. Throws Aborted
  // after abort().
  virtual void receive(schedules::Rank from, const MessageTag& tag, void* data,
                       std::size_t bytes, cudaStream_t consumer) = 0;

  // Blocks until every send and receive issued so far has completed.
  virtual void synchronize() = 0;

  // Stops all communication (queued and future); idempotent.
  virtual void abort() = 0;
};

}  // namespace gpipe::exec::cuda
