// The optimizer state of one layer on the device: the CUDA twin of
// cpu::OptimizerState (exec/cpu/optimizer.hpp), with the same configuration
// and the same arithmetic (exec/cuda/kernels/optimizer.hpp matches
// exec/cpu/optimizer.cpp bit for bit), so that a pipeline trained on the GPU in fp32 follows the CPU reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/cuda/layers/layer.hpp"
#include "exec/runtime/optimizer_config.hpp"

namespace gpipe::exec::cuda {

class DeviceOptimizerState {
 public:
  // State for `parameters` (none for sgd, one tensor each for momentum, two
  // for adamw), zeroed on `stream`, where every step runs.
  DeviceOptimizerState(const OptimizerConfig& config, std::span<const DeviceParameter> parameters,
                       CachingAllocator& allocator, const Stream& stream);
  // Applies and zeroes the gradients of `parameters` (the same list, same
  // order) on the stream; returns without waiting for the GPU.
  void step(std::span<DeviceParameter> parameters);
  // Bytes of state held (for the static-memory report).
  [[nodiscard]] std::int64_t bytes() const;

 private:
  OptimizerConfig config_;
  const Stream* stream_;
  int steps_ = 0;
  std::vector<DeviceTensor> first_;   // momentum buffer / Adam's m
  std::vector<DeviceTensor> second_;  // Adam's v
};

}  // namespace gpipe::exec::cuda
