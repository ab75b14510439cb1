// The DeviceLink of one process per rank, over NCCL point-to-point
// (exec/cuda/nccl/nccl_transport.hpp). The receiver allocates the message from
// the shape the plan gives (MessageSpec) and NCCL receives straight into it;
// both ends are ordered on the compute stream by the transport (the sender's
// later work waits until NCCL has read the tensor, so it may be freed at
// once; the receiver's compute stream waits for the data). Sends and
// receives launch NCCL kernels, which CUPTI attributes to the action.
#pragma once

#include "exec/cuda/nccl/device_transport.hpp"
#include "exec/cuda/runtime/device_link.hpp"

namespace gpipe::exec::cuda {

class NcclDeviceLink final : public DeviceLink {
 public:
  explicit NcclDeviceLink(DeviceTransport& transport) : transport_(transport) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, DeviceTensor tensor,
            RankDevice& from_device) override;
  [[nodiscard]] Arrival receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                                const MessageSpec& spec, RankDevice& to_device,
                                const ReceiveTiming& timing) override;
  [[nodiscard]] bool sends_on_gpu() const override { return true; }
  void abort() override { transport_.abort(); }

 private:
  DeviceTransport& transport_;
};

}  // namespace gpipe::exec::cuda
