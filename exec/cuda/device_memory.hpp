// Where device bytes come from: the seam between the caching allocator and
// the GPU. CudaDeviceMemory calls cudaMalloc / cudaFree / cudaMemGetInfo;
// FakeDeviceMemory hands out host memory and counts every call, so the
// allocator's accounting is tested in CI on a machine without a GPU.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace gpipe::exec::cuda {

// The device's own view of its memory (cudaMemGetInfo): every process and
// library on it counts, not only this allocator.
struct DeviceUsage {
  std::int64_t used_bytes = 0;
  std::int64_t total_bytes = 0;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of device memory; throws RunError naming the request when the device has none left.
  [[nodiscard]] virtual void* allocate(std::int64_t bytes) = 0;
  virtual void free(void* pointer) = 0;
  [[nodiscard]] virtual DeviceUsage usage() const = 0;
};

// The real device: cudaMalloc on `device` (made current for each call, so a
// worker thread of any rank may allocate).
class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(int device = 0) : device_(device) {}
  [[nodiscard]] void* allocate(std::int64_t bytes) override;
  void free(void* pointer) override;
  [[nodiscard]] DeviceUsage usage() const override;

 private:
  int device_;
};

// Host memory posing as a device of `capacity_bytes`: allocations beyond it
// throw RunError like a full GPU. Thread-safe. usage().used_bytes is the sum
// of live allocations (a real device adds its context and other processes).
class FakeDeviceMemory final : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(std::int64_t capacity_bytes = std::int64_t{1} << 30)
      : capacity_bytes_(capacity_bytes) {}
  ~FakeDeviceMemory() override;
  FakeDeviceMemory(const FakeDeviceMemory&) = delete;
  FakeDeviceMemory& operator=(const FakeDeviceMemory&) = delete;

  [[nodiscard]] void* allocate(std::int64_t bytes) override;
  // Throws std::logic_error for a pointer it did not hand out (a double free in the allocator).
  void free(void* pointer) override;
  [[nodiscard]] DeviceUsage usage() const override;

  [[nodiscard]] std::int64_t allocate_calls() const;
  [[nodiscard]] std::int64_t free_calls() const;
  [[nodiscard]] std::int64_t live_blocks() const;

 private:
  mutable std::mutex mutex_;
  std::int64_t capacity_bytes_;
  std::int64_t used_bytes_ = 0;
  std::int64_t allocate_calls_ = 0;
  std::int64_t free_calls_ = 0;
  std::unordered_map<void*, std::int64_t> live_;  // pointer -> bytes
};

}  // namespace gpipe::exec::cuda
