// A dense, row-major tensor in device memory: fp32, bf16 or int32 elements,
// storage from the CachingAllocator. Like exec::Tensor it is move-only (a
// stashed activation is never silently duplicated) and, while charged to a
// MemoryAccount, counts its exact bytes there: numel * element size, the
// figure the simulator predicts (the allocator's 512 B rounding is not
// charged). Copies to and from a host exec::Tensor run on a stream; bf16 is
// converted on the host (fp32 <-> bf16, round to nearest even).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/cuda/kernels/launch.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cuda {

enum class DeviceType : std::uint8_t { f32, bf16, i32 };

[[nodiscard]] std::int64_t element_bytes(DeviceType type);
[[nodiscard]] const char* element_type_name(DeviceType type);  // "f32", "bf16", "i32"

// fp32 -> bf16 bits rounding to nearest, ties to even (NaN stays NaN), and back (exact).
[[nodiscard]] std::uint16_t f32_to_bf16_bits(float value);
[[nodiscard]] float bf16_bits_to_f32(std::uint16_t bits);

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Uninitialised storage of `shape` (zero() fills it), charged to `account` when not null,
  // from the allocator's nullptr pool (by convention the owner's compute stream).
  DeviceTensor(CachingAllocator& allocator, std::vector<std::int64_t> shape, DeviceType type,
               MemoryAccount* account = nullptr);
  // The same from the pool of `pool_stream`: the stream that first writes the tensor.
  DeviceTensor(CachingAllocator& allocator, std::vector<std::int64_t> shape, DeviceType type,
               MemoryAccount* account, StreamHandle pool_stream);
  // A device copy of `host`: f32 host -> f32 or bf16; i32 host -> i32. Enqueued on `stream`;
  // the host tensor may be freed on return (pageable copies are staged before cudaMemcpyAsync returns).
  // Storage from the nullptr pool, as with the first constructor: when `stream` is not the
  // owner's compute stream, construct with pool_stream = stream and copy_from_host instead.
  [[nodiscard]] static DeviceTensor from_host(CachingAllocator& allocator, const Tensor& host, DeviceType type,
                                              const Stream& stream, MemoryAccount* account = nullptr);
  ~DeviceTensor();
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  [[nodiscard]] bool empty() const { return data_ == nullptr; }
  [[nodiscard]] DeviceType type() const { return type_; }
  [[nodiscard]] const std::vector<std::int64_t>& shape() const { return shape_; }
  [[nodiscard]] std::int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i)); }
  [[nodiscard]] std::int64_t numel() const { return numel_; }
  [[nodiscard]] std::int64_t bytes() const { return numel_ * element_bytes(type_); }

  // Device pointers; the typed ones throw std::logic_error when the type differs.
  [[nodiscard]] void* raw() const { return data_; }
  [[nodiscard]] float* f32() const;
  [[nodiscard]] __nv_bfloat16* bf16() const;
  [[nodiscard]] std::int32_t* i32() const;

  // Work enqueued on `stream` uses this tensor (beside its pool's stream): its storage is not
  // reused before that work is done (CachingAllocator::record_use). `stream` must outlive the
  // tensor's storage (its free records an event there). No-op on an empty tensor.
  void record_use(const Stream& stream);

  void charge_to(MemoryAccount* account);
  [[nodiscard]] MemoryAccount* account() const { return account_; }
  // Reinterprets the shape; the element count must not change.
  void reshape(std::vector<std::int64_t> shape);

  // Fills with zero bytes on `stream`.
  void zero(const Stream& stream);
  // Host values in, on `stream`: f32 into an f32 or bf16 tensor (bf16 rounded on the host), i32
  // into i32; exactly numel() of them. The host memory may be reused on return (cudaMemcpyAsync
  // stages pageable memory before it returns).
  void upload(std::span<const float> values, const Stream& stream);
  void upload(std::span<const std::int32_t> values, const Stream& stream);
  // Values out (bf16 widened to f32); waits for `stream`.
  void download(std::span<float> values, const Stream& stream) const;
  void download(std::span<std::int32_t> values, const Stream& stream) const;
  // The same with a host exec::Tensor (f32 for f32 and bf16, i32 for i32).
  void copy_from_host(const Tensor& host, const Stream& stream);
  [[nodiscard]] Tensor to_host(const Stream& stream, MemoryAccount* account = nullptr) const;

  // "bf16[4,16]", for error messages.
  [[nodiscard]] std::string describe() const;

 private:
  void release() noexcept;
  // Throws std::invalid_argument unless `count` host values of `host` type fit this tensor.
  void check_copy(std::size_t count, DeviceType host, const char* direction) const;

  CachingAllocator* allocator_ = nullptr;
  std::vector<std::int64_t> shape_;
  DeviceType type_ = DeviceType::f32;
  std::int64_t numel_ = 0;
  void* data_ = nullptr;
  MemoryAccount* account_ = nullptr;
};

// The exec::Tensor bridges.
inline void DeviceTensor::copy_from_host(const Tensor& host, const Stream& stream) {
  if (host.type() == ElementType::i32) {
    upload(host.i32(), stream);
  } else {
    upload(host.f32(), stream);
  }
}

inline Tensor DeviceTensor::to_host(const Stream& stream, MemoryAccount* account) const {
  Tensor host(shape_, type_ == DeviceType::i32 ? ElementType::i32 : ElementType::f32, account);
  if (host.type() == ElementType::i32) {
    download(host.i32(), stream);
  } else {
    download(host.f32(), stream);
  }
  return host;
}

inline DeviceTensor DeviceTensor::from_host(CachingAllocator& allocator, const Tensor& host, DeviceType type,
                                            const Stream& stream, MemoryAccount* account) {
  DeviceTensor tensor(allocator, host.shape(), type, account);
  tensor.copy_from_host(host, stream);
  return tensor;
}

}  // namespace gpipe::exec::cuda
