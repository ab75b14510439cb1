#include "exec/cuda/backend/nccl_device_link.hpp"

#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

void NcclDeviceLink::send(schedules::Rank /*from*/, schedules::Rank to, const MessageTag& tag,
                          DeviceTensor tensor, RankDevice& from_device, const TransferTiming& timing) {
  const StreamHandle stream = transport_.receive_stream(tag.kind);  // sends of a kind share its stream
  if (timing.begin) timing.begin(stream);
  const StreamHandle used = transport_.send(to, tag, tensor.raw(), static_cast<std::size_t>(tensor.bytes()),
                                            from_device.compute.get());
  if (timing.end) timing.end(used);
  from_device.allocator.record_use(tensor.raw(), used);
  // Freed now; its block returns to the cache once the send has read it.
}

Arrival NcclDeviceLink::receive(schedules::Rank /*to*/, schedules::Rank from, const MessageTag& tag,
                                const MessageSpec& spec, RankDevice& to_device,
                                const TransferTiming& timing) {
  const StreamHandle stream = transport_.receive_stream(tag.kind);
  DeviceTensor tensor(to_device.allocator, spec.shape, spec.type, nullptr, stream);
  if (timing.begin) timing.begin(stream);
  transport_.receive(from, tag, tensor.raw(), static_cast<std::size_t>(tensor.bytes()));
  if (timing.end) timing.end(stream);
  auto arrived = std::make_shared<Event>(false);
  GPIPE_CUDA_CHECK(cudaEventRecord(arrived->get(), stream));
  return {std::move(tensor), std::move(arrived)};
}

}  // namespace gpipe::exec::cuda
