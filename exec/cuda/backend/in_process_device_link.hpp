// The DeviceLink of ranks that are threads of one process on one GPU. SEND
// records an event on the sender's compute stream and posts the tensor with
// it (exec::Mailboxes); RECV makes the receiver's stream for that link wait
// on the event, copies the tensor device to device into the receiver's own
// memory there, and records the arrival. Nothing waits on the host but the
// mailbox, so the copy starts on the GPU as soon as the producer's kernels end.
//
// Memory: the sender's tensor is freed once the copy is enqueued, with the
// receive stream recorded as its user (CachingAllocator::record_use), so its
// block returns to the sender only after the copy has read it; the receiver's
// block is allocated for the receive stream, and the worker records the
// compute stream's use when it consumes it.
#pragma once

#include "exec/cuda/backend/device_link.hpp"
#include "exec/runtime/mailboxes.hpp"

namespace gpipe::exec::cuda {

class InProcessDeviceLink final : public DeviceLink {
 public:
  explicit InProcessDeviceLink(int num_ranks) : mailboxes_(num_ranks) {}

  void send(schedules::Rank from, schedules::Rank to, const MessageTag& tag, DeviceTensor tensor,
            RankDevice& from_device, const TransferTiming& timing) override;
  [[nodiscard]] Arrival receive(schedules::Rank to, schedules::Rank from, const MessageTag& tag,
                                const MessageSpec& spec, RankDevice& to_device,
                                const TransferTiming& timing) override;
  // The receiver copies; the send only records an event.
  [[nodiscard]] bool sends_on_gpu() const override { return false; }
  void abort() override { mailboxes_.abort(); }
  // Every GPU wait here is on an event already recorded: nothing to end.
  void finish_abort() override {}

  [[nodiscard]] std::size_t pending() const { return mailboxes_.pending(); }

 private:
  struct Posted {
    DeviceTensor tensor;
    std::shared_ptr<Event> ready;  // recorded on the sender's compute stream after the producer
  };
  Mailboxes<Posted> mailboxes_;
};

}  // namespace gpipe::exec::cuda
