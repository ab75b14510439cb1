#include "exec/cuda/device_memory.hpp"

#include <cstdlib>
#include <stdexcept>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "exec/cuda/check.hpp"
#include "schedules/error.hpp"

namespace gpipe::exec::cuda {

void* CudaDeviceMemory::allocate(std::int64_t bytes) {
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, static_cast<std::size_t>(bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // an out-of-memory error is not sticky: clear it for the caller
    const DeviceUsage now = usage();
    throw RunError(fmt::format("cudaMalloc of {} bytes failed on device {}: {} ({} of {} bytes in use)",
                               bytes, device_, cudaGetErrorString(status), now.used_bytes, now.total_bytes));
  }
  return pointer;
}

void CudaDeviceMemory::free(void* pointer) {
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  GPIPE_CUDA_CHECK(cudaFree(pointer));
}

DeviceUsage CudaDeviceMemory::usage() const {
  GPIPE_CUDA_CHECK(cudaSetDevice(device_));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  GPIPE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return {static_cast<std::int64_t>(total_bytes - free_bytes), static_cast<std::int64_t>(total_bytes)};
}

FakeDeviceMemory::~FakeDeviceMemory() {
  for (auto& [pointer, bytes] : live_) std::free(pointer);
}

void* FakeDeviceMemory::allocate(std::int64_t bytes) {
  std::scoped_lock lock(mutex_);
  ++allocate_calls_;
  if (bytes < 0 || used_bytes_ + bytes > capacity_bytes_) {
    throw RunError(fmt::format("fake device allocation of {} bytes failed: out of memory ({} of {} bytes in use)",
                               bytes, used_bytes_, capacity_bytes_));
  }
  // 256-byte aligned like cudaMalloc, at least one byte so every pointer is distinct.
  const std::size_t size = (static_cast<std::size_t>(bytes) + 255) / 256 * 256;
  void* pointer = std::aligned_alloc(256, size == 0 ? 256 : size);
  if (pointer == nullptr) throw RunError(fmt::format("fake device: host allocation of {} bytes failed", bytes));
  live_.emplace(pointer, bytes);
  used_bytes_ += bytes;
  return pointer;
}

void FakeDeviceMemory::free(void* pointer) {
  std::scoped_lock lock(mutex_);
  const auto it = live_.find(pointer);
  if (it == live_.end()) throw std::logic_error("fake device: free of a pointer it did not allocate");
  ++free_calls_;
  used_bytes_ -= it->second;
  live_.erase(it);
  std::free(pointer);
}

DeviceUsage FakeDeviceMemory::usage() const {
  std::scoped_lock lock(mutex_);
  return {used_bytes_, capacity_bytes_};
}

std::int64_t FakeDeviceMemory::allocate_calls() const {
  std::scoped_lock lock(mutex_);
  return allocate_calls_;
}

std::int64_t FakeDeviceMemory::free_calls() const {
  std::scoped_lock lock(mutex_);
  return free_calls_;
}

std::int64_t FakeDeviceMemory::live_blocks() const {
  std::scoped_lock lock(mutex_);
  return static_cast<std::int64_t>(live_.size());
}

}  // namespace gpipe::exec::cuda
