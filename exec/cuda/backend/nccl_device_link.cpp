#include "exec/cuda/backend/nccl_device_link.hpp"

#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

void NcclDeviceLink::send(schedules::Rank /*from*/, schedules::Rank to, const MessageTag& tag,
                          DeviceTensor tensor, const ActionMark& mark) {
  // Sends of a kind share its stream; the send's end is marked on the stream it ran on.
  DeviceTimer* timer = mark.measured() ? timer_ : nullptr;
  if (timer != nullptr) timer->begin_on(mark, transport_.receive_stream(tag.kind));
  const StreamHandle used = transport_.send(to, tag, tensor.raw(),
                                            static_cast<std::size_t>(tensor.bytes()),
                                            device_.compute().get());
  if (timer != nullptr) timer->end_on(mark, used);
  device_.allocator().record_use(tensor.raw(), used);
  // Freed now; its block returns to the cache once the send has read it.
}

Arrival NcclDeviceLink::receive(schedules::Rank /*to*/, schedules::Rank from, const MessageTag& tag,
                                const ActionMark& mark) {
  const StreamHandle stream = transport_.receive_stream(tag.kind);
  const MessageSpec spec = shapes_.of(tag);
  DeviceTensor tensor(device_.allocator(), spec.shape, spec.type, nullptr, stream);
  {
    const TimedOnStream timed(timer_, mark, stream);
    transport_.receive(from, tag, tensor.raw(), static_cast<std::size_t>(tensor.bytes()));
  }
  auto arrived = std::make_shared<Event>(false);
  GPIPE_CUDA_CHECK(cudaEventRecord(arrived->get(), stream));
  return {std::move(tensor), std::move(arrived)};
}

}  // namespace gpipe::exec::cuda
