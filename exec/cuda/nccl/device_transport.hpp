// How ranks in separate processes exchange device buffers, below the NCCL
// link (exec/cuda/backend/nccl_device_link.hpp). Unlike the in-process
// mailboxes, which move whole tensors, name both ends because one process
// hosts every rank, and match messages by tag in any order: over NCCL, this process is one rank, the buffers are device memory the
// caller owns and sizes (the receiver knows each message's shape from the
// plan), the work is ordered on CUDA streams instead of blocking the host
// (the transfers run on streams of their own, off the compute stream, as the
// simulator models them),
// and point-to-point messages between two ranks match in issue order, not by
// tag: both ranks must issue their sends and receives of one kind in the same
// order (the schedule's order does this). The tag names the message in errors.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "exec/runtime/message.hpp"

namespace gpipe::exec::cuda {

class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;

  // Sends `bytes` at device pointer `data` to rank `to` once the work already
  // queued on `producer` is done. Returns the stream the send runs on: `data`
  // must stay unchanged until that stream's work queued so far is done (free
  // it through CachingAllocator::record_use of that stream). The producer
  // never waits for the send. Returns without waiting. Throws Aborted after abort().
  virtual cudaStream_t send(schedules::Rank to, const MessageTag& tag, const void* data,
                            std::size_t bytes, cudaStream_t producer) = 0;

  // Receives `bytes` from rank `from` into device pointer `data`, which no
  // other stream may still be using (allocate it for the stream that
  // receive_stream(tag.kind) returns). The data is there once the work queued
  // on that stream so far is done: other streams wait on an event recorded
  // there. Returns without waiting. Throws Aborted after abort().
  virtual void receive(schedules::Rank from, const MessageTag& tag, void* data,
                       std::size_t bytes) = 0;
  // The stream receives of this kind run on.
  [[nodiscard]] virtual cudaStream_t receive_stream(MessageKind kind) const = 0;

  // Blocks until every send and receive issued so far has completed.
  virtual void synchronize() = 0;

  // Asks every communication to stop; safe from any thread, idempotent. The
  // thread that issues the sends and receives ends them (finish_abort), so
  // that no two threads ever call the library on one communicator.
  virtual void abort() = 0;
  // On the issuing thread, after abort(): ends the communication now, so that
  // the GPU work waiting on it (a receive from a failed peer) finishes.
  virtual void finish_abort() = 0;
};

}  // namespace gpipe::exec::cuda
