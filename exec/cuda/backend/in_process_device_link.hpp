// The link of ranks that are threads of one process on one GPU. SEND records
// an event on the sender's compute stream and posts the tensor with it
// (exec::Mailboxes); RECV makes the receiver's stream for that link wait on
// the event, copies the tensor device to device into the receiver's own
// memory there, and records the arrival. Nothing waits on the host but the
// mailbox, so the copy starts on the GPU as soon as the producer's kernels
// end. The copy is the message's time: the RECV is timed around it, and its
// SEND takes the same interval (exec/runtime/step_timeline.hpp).
//
// Memory: the sender's tensor is freed once the copy is enqueued, with the
// receive stream recorded as its user (CachingAllocator::record_use), so its
// block returns to the sender only after the copy has read it; the receiver's
// block is allocated for the receive stream, and the receiver's
// RankDevice::ready() records the compute stream's use when it consumes it.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/backend/device_timer.hpp"
#include "exec/cuda/backend/rank_device.hpp"
#include "exec/runtime/mailboxes.hpp"

namespace gpipe::exec::cuda {

class InProcessDeviceLink final : public DeviceLink {
 public:
  // `devices` indexed by rank; `timer` times the measured copies (null: none).
  InProcessDeviceLink(std::vector<RankDevice*> devices, MessageShapes shapes, DeviceTimer* timer);

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, DeviceTensor tensor,
            const ActionMark& mark) override;
  [[nodiscard]] Arrival receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                                const ActionMark& mark) override;
  void abort() override { mailboxes_.abort(); }

  [[nodiscard]] std::size_t pending() const { return mailboxes_.pending(); }

 private:
  struct Posted {
    DeviceTensor tensor;
    std::shared_ptr<Event> ready;  // recorded on the sender's compute stream after the producer
  };
  [[nodiscard]] RankDevice& device(schedules::Rank rank) const { return *devices_.at(rank.at()); }

  std::vector<RankDevice*> devices_;
  MessageShapes shapes_;
  DeviceTimer* timer_;
  Mailboxes<Posted> mailboxes_;
};

}  // namespace gpipe::exec::cuda
