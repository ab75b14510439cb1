#include "exec/cuda/base/device.hpp"

#include <cstdlib>

#include <cuda_runtime.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

namespace {

// CUDA gives a device 8 hardware work queues unless CUDA_DEVICE_MAX_CONNECTIONS
// says otherwise, and reads the variable once, when it initializes. K = 4
// ranks with three streams each (compute, send, receive) need 12: with 8,
// streams share queues and independent stages can serialize. This file is in
// every program that uses the backend (device_count), so its static
// initializer runs before main and before any CUDA call; a value the user set
// is kept.
[[maybe_unused]] const bool kConnectionsSet = [] {
  (void)::setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
  return true;
}();

}  // namespace

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error of a missing driver
    return 0;
  }
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    // Without a driver the runtime says its version is "insufficient": say what it means.
    if (status == cudaErrorInsufficientDriver) {
      return "no usable CUDA driver on this machine (cudaGetDeviceCount: cudaErrorInsufficientDriver)";
    }
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
  }
  return count > 0 ? "" : "the driver reports 0 devices";
}

void require_device() {
  if (const std::string reason = no_device_reason(); !reason.empty()) {
    throw RunError("no CUDA device: " + reason);
  }
}

int compute_capability_major(int device) {
  int major = 0;
  GPIPE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

std::string device_name(int device) {
  cudaDeviceProp properties{};
  GPIPE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return properties.name;
}

}  // namespace gpipe::exec::cuda

namespace gpipe::exec::cuda {

void use_device(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
  (void)cudaGetLastError();
  GPIPE_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace gpipe::exec::cuda
