// What one rank of the CUDA backend computes on (the runtime's
// B::RankDevice, exec/runtime/worker.hpp): its compute stream (in the rank's
// SM partition, shared by every stage the rank holds), one receive stream per
// incoming link (activations from the previous rank, gradients from the next:
// each directed link is a FIFO of its own, as the simulator models it), its
// own caching allocator and its own cuBLASLt handle (so no lock is shared
// between ranks on the hot path). Made while the rank's green context is
// current (SmPartitions::ThreadBinding), so that its streams belong to it.
//
// The host enqueues and runs ahead: a step's data is uploaded before the
// step starts, a received message is ordered before its consumer with an
// event, and only the end of a step, the loss and --check-finite wait for
// the GPU.
#pragma once

#include <functional>

#include "exec/cuda/backend/device_link.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/cuda/kernels/gemm.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/runtime/run_control.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cuda {

class RankDevice {
 public:
  // `poll_at_step_end`: wait for the end of a step by polling, so that an
  // abort ends the wait (a receive over NCCL from a failed peer never
  // completes); in one process every wait is on an event already recorded and
  // a blocking wait adds no polling calls (each of which CUPTI would record).
  RankDevice(int device_index, Stream& compute_stream, DeviceMemory& memory, bool poll_at_step_end);

  [[nodiscard]] LayerContext context() { return {&allocator_, &blas_, &compute_}; }
  [[nodiscard]] Stream& compute() { return compute_; }
  [[nodiscard]] Stream& receive_stream(MessageKind kind) {
    return kind == MessageKind::activation ? from_previous_ : from_next_;
  }
  [[nodiscard]] CachingAllocator& allocator() { return allocator_; }
  // Binds the calling thread to the rank's green context (every event and
  // stream the rank's thread makes must belong to it); empty without one.
  void set_thread_binding(std::function<void()> bind) { bind_thread_ = std::move(bind); }

  // What the runtime's worker asks of its device.
  void enter_thread();
  [[nodiscard]] DeviceTensor upload(const Tensor& host);
  void data_ready();
  [[nodiscard]] DeviceTensor ready(Arrival arrival);
  [[nodiscard]] Arrival local(DeviceTensor tensor) { return {std::move(tensor), nullptr}; }
  [[nodiscard]] bool all_finite(const DeviceTensor& tensor);
  [[nodiscard]] double sum(const DeviceTensor& tensor);
  void finish_step(RunControl& control);
  void drain() noexcept;

 private:
  int device_;
  Stream& compute_;
  Stream from_previous_;  // activations arrive here
  Stream from_next_;      // gradients arrive here
  CachingAllocator allocator_;
  BlasHandle blas_;
  bool poll_at_step_end_;
  std::function<void()> bind_thread_;
};

// Whether every value of `tensor` is finite, read back on `stream` (an f32
// tensor; other types hold no NaN).
[[nodiscard]] bool all_finite_on(const DeviceTensor& tensor, const Stream& stream);

}  // namespace gpipe::exec::cuda
