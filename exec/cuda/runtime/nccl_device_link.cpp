#include "exec/cuda/runtime/nccl_device_link.hpp"

namespace gpipe::exec::cuda {

void NcclDeviceLink::send(schedules::Rank /*from*/, schedules::Rank to, const MessageTag& tag,
                          DeviceTensor tensor, RankDevice& from_device) {
  transport_.send(to, tag, tensor.raw(), static_cast<std::size_t>(tensor.bytes()),
                  from_device.compute.get());
  // The compute stream now waits for NCCL to have read it: freeing it here is
  // stream-ordered like any temporary of the compute stream.
}

Arrival NcclDeviceLink::receive(schedules::Rank /*to*/, schedules::Rank from, const MessageTag& tag,
                                const MessageSpec& spec, RankDevice& to_device,
                                const ReceiveTiming& timing) {
  DeviceTensor tensor(to_device.allocator, spec.shape, spec.type);
  if (timing.begin) timing.begin(to_device.compute);
  transport_.receive(from, tag, tensor.raw(), static_cast<std::size_t>(tensor.bytes()),
                     to_device.compute.get());
  if (timing.end) timing.end(to_device.compute);
  return {std::move(tensor), nullptr};  // already ordered on the compute stream
}

}  // namespace gpipe::exec::cuda
