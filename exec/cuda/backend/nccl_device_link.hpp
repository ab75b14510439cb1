// The link of one process per rank, over NCCL point-to-point
// (exec/cuda/nccl/nccl_transport.hpp). Transfers run on the transport's
// communication streams, never on the compute stream:
// - SEND: the send waits for the producer's work; the tensor is freed at once
//   with the send's stream recorded as its user (CachingAllocator::record_use),
//   so its block is reused only after NCCL has read it;
// - RECV: the message is allocated from the receive stream's pool at the shape
//   the run gives (MessageShapes), NCCL receives into it there, and the
//   arrival is an event on that stream, which the consuming F or B waits on.
// Both launch NCCL kernels, which the timer attributes to the action.
#pragma once

#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/backend/device_timer.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/cuda/nccl/device_transport.hpp"

namespace gpipe::exec::cuda {

class NcclDeviceLink final : public DeviceLink {
 public:
  // `device` is this process's rank's; `timer` times measured transfers (null: none).
  NcclDeviceLink(DeviceTransport& transport, RankDevice& device, MessageShapes shapes,
                 DeviceTimer* timer)
      : transport_(transport), device_(device), shapes_(std::move(shapes)), timer_(timer) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, DeviceTensor tensor,
            const ActionMark& mark) override;
  [[nodiscard]] Arrival receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                                const ActionMark& mark) override;
  void abort() override { transport_.abort(); }
  void finish_abort() override { transport_.finish_abort(); }

 private:
  DeviceTransport& transport_;
  RankDevice& device_;
  MessageShapes shapes_;
  DeviceTimer* timer_;
};

}  // namespace gpipe::exec::cuda
