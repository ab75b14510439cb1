#include "exec/cuda/backend/rank_device.hpp"

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "exec/cuda/base/device.hpp"

namespace gpipe::exec::cuda {

namespace {

std::vector<float> values_of(const DeviceTensor& tensor, const Stream& stream) {
  std::vector<float> values(static_cast<std::size_t>(tensor.numel()));
  tensor.download(values, stream);
  return values;
}

}  // namespace

bool all_finite_on(const DeviceTensor& tensor, const Stream& stream) {
  if (tensor.empty() || tensor.type() == DeviceType::i32) return true;
  for (float v : values_of(tensor, stream)) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

RankDevice::RankDevice(int device_index, Stream& compute_stream, DeviceMemory& memory,
                       bool poll_at_step_end)
    : device_(device_index),
      compute_(compute_stream),
      from_previous_(device_index),
      from_next_(device_index),
      allocator_(memory),
      poll_at_step_end_(poll_at_step_end) {}

void RankDevice::enter_thread() {
  use_device(device_);
  if (bind_thread_) bind_thread_();  // into the rank's green context
}

DeviceTensor RankDevice::upload(const Tensor& host) {
  const DeviceType type = host.type() == ElementType::i32 ? DeviceType::i32 : DeviceType::f32;
  return DeviceTensor::from_host(allocator_, host, type, compute_);
}

void RankDevice::data_ready() { compute_.synchronize(); }  // the upload is not part of the step

DeviceTensor RankDevice::ready(Arrival arrival) {
  if (arrival.ready) {
    // Received on a link's stream: the compute stream reads it after the copy,
    // and its block goes back to the cache only after the compute stream's use.
    compute_.wait(*arrival.ready);
    arrival.tensor.record_use(compute_);
  }
  return std::move(arrival.tensor);
}

bool RankDevice::all_finite(const DeviceTensor& tensor) { return all_finite_on(tensor, compute_); }

double RankDevice::sum(const DeviceTensor& tensor) {
  double total = 0;
  for (float v : values_of(tensor, compute_)) total += v;
  return total;
}

void RankDevice::finish_step(RunControl& control) {
  if (!poll_at_step_end_) {
    for (const Stream* s : {&compute_, &from_previous_, &from_next_}) s->synchronize();
    control.note_progress();
    return;
  }
  std::vector<Event> done;
  for (const Stream* s : {&compute_, &from_previous_, &from_next_}) done.emplace_back(false).record(*s);
  for (const Event& e : done) {
    while (!e.done()) {
      control.throw_if_aborted();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  control.note_progress();
}

void RankDevice::drain() noexcept {
  try {
    compute_.synchronize();
    from_previous_.synchronize();
    from_next_.synchronize();
  } catch (...) {  // the device failed: the run has failed already, and freeing is all that is left
  }
}

}  // namespace gpipe::exec::cuda
