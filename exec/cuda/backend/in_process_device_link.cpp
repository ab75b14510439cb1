#include "exec/cuda/backend/in_process_device_link.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

InProcessDeviceLink::InProcessDeviceLink(std::vector<RankDevice*> devices, MessageShapes shapes,
                                         DeviceTimer* timer)
    : devices_(std::move(devices)),
      shapes_(std::move(shapes)),
      timer_(timer),
      mailboxes_(static_cast<int>(devices_.size())) {}

void InProcessDeviceLink::send(schedules::Rank from, schedules::Rank to, const MessageTag& tag,
                               DeviceTensor tensor, const ActionMark& /*mark*/) {
  auto ready = std::make_shared<Event>(false);
  ready->record(device(from).compute());
  tensor.charge_to(nullptr);  // in flight: neither rank's activation memory
  mailboxes_.post(from, to, tag, Posted{std::move(tensor), std::move(ready)});
}

Arrival InProcessDeviceLink::receive(schedules::Rank to, schedules::Rank from,
                                     const MessageTag& tag, const ActionMark& mark) {
  Posted posted = mailboxes_.take(to, from, tag);
  const MessageSpec spec = shapes_.of(tag);
  if (posted.tensor.shape() != spec.shape || posted.tensor.type() != spec.type) {
    throw std::logic_error(fmt::format("the {} is {}, the receiver expected {}[{}]", to_string(tag),
                                       posted.tensor.describe(), element_type_name(spec.type),
                                       fmt::join(spec.shape, ",")));
  }
  RankDevice& receiver = device(to);
  Stream& stream = receiver.receive_stream(tag.kind);
  stream.wait(*posted.ready);  // before the timer's start mark: the copy can begin from here
  DeviceTensor copy(receiver.allocator(), posted.tensor.shape(), posted.tensor.type(), nullptr,
                    stream.get());
  {
    const TimedOnStream timed(timer_, mark, stream.get());
    GPIPE_CUDA_CHECK(cudaMemcpyAsync(copy.raw(), posted.tensor.raw(),
                                     static_cast<std::size_t>(copy.bytes()),
                                     cudaMemcpyDeviceToDevice, stream.get()));
  }
  posted.tensor.record_use(stream);
  posted.tensor = DeviceTensor();  // back to the sender's cache once the copy has read it
  auto arrived = std::make_shared<Event>(false);
  arrived->record(stream);
  return {std::move(copy), std::move(arrived)};
}

}  // namespace gpipe::exec::cuda
