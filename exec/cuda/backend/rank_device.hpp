// What one rank of the CUDA executor works with on its GPU: its compute
// stream (in the rank's SM partition, shared by every stage the rank holds),
// one receive stream per incoming link (activations from the previous rank,
// gradients from the next: each directed link is a FIFO of its own, as the
// simulator models it), its own caching allocator and its own cuBLASLt handle
// (so no lock is shared between ranks on the hot path). Made while the
// rank's green context is current (SmPartitions::ThreadBinding), so that its
// streams belong to it.
#pragma once

#include <functional>
#include <vector>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/kernels/gemm.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/runtime/transport.hpp"

namespace gpipe::exec::cuda {

struct RankDevice {
  RankDevice(int device_index, Stream& compute_stream, DeviceMemory& memory)
      : device(device_index),
        compute(compute_stream),
        from_previous(device_index),
        from_next(device_index),
        allocator(memory) {}

  int device = 0;
  Stream& compute;
  Stream from_previous;  // activations arrive here
  Stream from_next;      // gradients arrive here
  CachingAllocator allocator;
  BlasHandle blas;
  // Binds the calling thread to the rank's green context (every event and
  // stream the rank's thread makes must belong to it); empty without one.
  std::function<void()> bind_thread;

  [[nodiscard]] LayerContext context() { return {&allocator, &blas, &compute}; }
  [[nodiscard]] Stream& receive_stream(MessageKind kind) {
    return kind == MessageKind::activation ? from_previous : from_next;
  }
};

}  // namespace gpipe::exec::cuda
