#include "exec/cuda/base/device_memory.hpp"

#include <cstdlib>
#include <stdexcept>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"

namespace gpipe::exec::cuda {

void* CudaDeviceMemory::allocate(std::int64_t bytes) {
  use_device(device_);
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
  use_device(device_);
  GPIPE_CUDA_CHECK(cudaFree(pointer));
}

DeviceUsage CudaDeviceMemory::usage() const {
  use_device(device_);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  GPIPE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return {static_cast<std::int64_t>(total_bytes - free_bytes), static_cast<std::int64_t>(total_bytes)};
}

CudaDeviceMemory::~CudaDeviceMemory() {
  // Errors are ignored: at process exit the runtime may already be gone, and a destructor must not throw.
  (void)cudaSetDevice(device_);
  for (auto& [token, event] : recorded_) (void)cudaEventDestroy(event);
}

EventToken CudaDeviceMemory::record_event(StreamHandle stream) {
  std::scoped_lock lock(mutex_);
  use_device(device_);
  // A fresh event each time, made in the calling thread's context: an event
  // must be recorded on a stream of its own context, and the ranks' threads
  // run in different (green) contexts, so events are not pooled across them.
  cudaEvent_t event = nullptr;
  GPIPE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  if (const cudaError_t status = cudaEventRecord(event, stream); status != cudaSuccess) {
    (void)cudaEventDestroy(event);
    GPIPE_CUDA_CHECK(status);
  }
  const EventToken token = next_token_++;
  recorded_.emplace(token, event);
  return token;
}

bool CudaDeviceMemory::event_done(EventToken event) {
  std::scoped_lock lock(mutex_);
  const cudaError_t status = cudaEventQuery(event_of(event));
  if (status == cudaErrorNotReady) return false;
  GPIPE_CUDA_CHECK(status);
  return true;
}

void CudaDeviceMemory::release_event(EventToken event) {
  std::scoped_lock lock(mutex_);
  EventHandle handle = event_of(event);
  recorded_.erase(event);
  GPIPE_CUDA_CHECK(cudaEventDestroy(handle));
}

CudaDeviceMemory::EventHandle CudaDeviceMemory::event_of(EventToken event) const {
  const auto it = recorded_.find(event);
  if (it == recorded_.end()) throw std::logic_error(fmt::format("CUDA device memory: unknown event token {}", event));
  return it->second;
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

EventToken FakeDeviceMemory::record_event(StreamHandle /*stream*/) {
  std::scoped_lock lock(mutex_);
  held_.insert(++last_recorded_);
  return last_recorded_;
}

bool FakeDeviceMemory::event_done(EventToken event) {
  std::scoped_lock lock(mutex_);
  if (!held_.contains(event)) throw std::logic_error(fmt::format("fake device: query of unknown event {}", event));
  return event <= last_completed_;
}

void FakeDeviceMemory::release_event(EventToken event) {
  std::scoped_lock lock(mutex_);
  if (held_.erase(event) == 0) throw std::logic_error(fmt::format("fake device: release of unknown event {}", event));
}

void FakeDeviceMemory::complete_events() {
  std::scoped_lock lock(mutex_);
  last_completed_ = last_recorded_;
}

std::int64_t FakeDeviceMemory::pending_events() const {
  std::scoped_lock lock(mutex_);
  return static_cast<std::int64_t>(last_recorded_ - last_completed_);
}

std::int64_t FakeDeviceMemory::held_events() const {
  std::scoped_lock lock(mutex_);
  return static_cast<std::int64_t>(held_.size());
}

std::int64_t FakeDeviceMemory::record_calls() const {
  std::scoped_lock lock(mutex_);
  return static_cast<std::int64_t>(last_recorded_);
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
