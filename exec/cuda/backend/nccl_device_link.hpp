// The DeviceLink of one process per rank, over NCCL point-to-point
// (exec/cuda/nccl/nccl_transport.hpp). Transfers run on the transport's
// communication streams, never on the compute stream:
// - SEND: the send waits for the producer's work; the tensor is freed at once
//   with the send's stream recorded as its user (CachingAllocator::record_use),
//   so its block is reused only after NCCL has read it;
// - RECV: the message is allocated from the receive stream's pool at the shape
//   the plan gives (MessageSpec), NCCL receives into it there, and the arrival
//   is an event on that stream, which the consuming F or B waits on.
// Both launch NCCL kernels, which CUPTI attributes to the action.
#pragma once

#include "exec/cuda/nccl/device_transport.hpp"
#include "exec/cuda/backend/device_link.hpp"

namespace gpipe::exec::cuda {

class NcclDeviceLink final : public DeviceLink {
 public:
  explicit NcclDeviceLink(DeviceTransport& transport) : transport_(transport) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, DeviceTensor tensor,
            RankDevice& from_device, const TransferTiming& timing) override;
  [[nodiscard]] Arrival receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                                const MessageSpec& spec, RankDevice& to_device,
                                const TransferTiming& timing) override;
  [[nodiscard]] bool sends_on_gpu() const override { return true; }
  void abort() override { transport_.abort(); }
  void finish_abort() override { transport_.finish_abort(); }

 private:
  DeviceTransport& transport_;
};

}  // namespace gpipe::exec::cuda
