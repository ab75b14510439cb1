// How the CUDA executor's ranks hand activations and gradients to each other:
// the seam between the worker and its wire. InProcessDeviceLink copies between
// the ranks (threads) of one process on one GPU; NcclDeviceLink moves them
// between processes over NCCL. Both order the data on CUDA streams and never
// make the host wait for the GPU.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/runtime/transport.hpp"

namespace gpipe::exec::cuda {

// A message in the receiver's memory, and the event after which it is there
// (the consumer's compute stream waits on it before reading; null when it is
// already ordered on the compute stream).
struct Arrival {
  DeviceTensor tensor;
  std::shared_ptr<Event> ready;
};

// What the receiver knows of a message before it arrives.
struct MessageSpec {
  std::vector<std::int64_t> shape;
  DeviceType type = DeviceType::f32;
};

// Brackets the GPU work of a transfer on the stream it runs on (for the timer).
struct TransferTiming {
  std::function<void(StreamHandle)> begin;
  std::function<void(StreamHandle)> end;
};

class DeviceLink {
 public:
  virtual ~DeviceLink() = default;

  // SEND: `tensor`, produced by work queued on `from_device.compute`, goes to
  // rank `to`. Returns without waiting for the GPU. Throws Aborted after
  // abort(). `timing` brackets the send's GPU work where it has any
  // (sends_on_gpu()).
  virtual void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                    DeviceTensor tensor, RankDevice& from_device, const TransferTiming& timing) = 0;

  // RECV: the message into `to_device`'s memory (may block the host until the
  // sender has sent it, never until the GPU has moved it). Throws Aborted
  // when the run is aborted.
  [[nodiscard]] virtual Arrival receive(schedules::Rank to, schedules::Rank from,
                                        const MessageTag& tag, const MessageSpec& spec,
                                        RankDevice& to_device, const TransferTiming& timing) = 0;

  // Whether a send launches GPU work of its own (to be timed as the SEND).
  [[nodiscard]] virtual bool sends_on_gpu() const = 0;

  // Wakes every blocked receive; idempotent, safe from any thread.
  virtual void abort() = 0;
  // On the worker's thread, after an abort: ends what the GPU may still wait
  // for (a receive from a failed peer), so that its streams can drain.
  virtual void finish_abort() = 0;
};

}  // namespace gpipe::exec::cuda
