#include "exec/cuda/base/device_tensor.hpp"

#include <bit>
#include <cmath>
#include <span>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"

namespace gpipe::exec::cuda {

std::int64_t element_bytes(DeviceType type) { return type == DeviceType::bf16 ? 2 : 4; }

const char* element_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::f32: return "f32";
    case DeviceType::bf16: return "bf16";
    case DeviceType::i32: return "i32";
  }
  return "?";
}

std::uint16_t f32_to_bf16_bits(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  // A NaN must stay a NaN: rounding could carry its payload into the exponent (infinity).
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040U);
  const std::uint32_t lsb = (bits >> 16) & 1U;
  return static_cast<std::uint16_t>((bits + 0x7FFFU + lsb) >> 16);
}

float bf16_bits_to_f32(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

namespace {

// exec::element_count's rule, here so that libgpipe_cuda.a needs no symbol of tensor.cpp.
std::int64_t count_elements(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument(fmt::format("negative tensor dimension {}", d));
    count *= d;
  }
  return count;
}

}  // namespace

DeviceTensor::DeviceTensor(CachingAllocator& allocator, std::vector<std::int64_t> shape, DeviceType type,
                           MemoryAccount* account)
    : DeviceTensor(allocator, std::move(shape), type, account, nullptr) {}

DeviceTensor::DeviceTensor(CachingAllocator& allocator, std::vector<std::int64_t> shape, DeviceType type,
                           MemoryAccount* account, StreamHandle pool_stream)
    : allocator_(&allocator), shape_(std::move(shape)), type_(type), numel_(count_elements(shape_)) {
  data_ = allocator.allocate(bytes(), account, pool_stream);
  account_ = account;
}

DeviceTensor::~DeviceTensor() { release(); }

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : allocator_(std::exchange(other.allocator_, nullptr)),
      shape_(std::move(other.shape_)),
      type_(other.type_),
      numel_(std::exchange(other.numel_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      account_(std::exchange(other.account_, nullptr)) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    shape_ = std::move(other.shape_);
    type_ = other.type_;
    numel_ = std::exchange(other.numel_, 0);
    data_ = std::exchange(other.data_, nullptr);
    account_ = std::exchange(other.account_, nullptr);
  }
  return *this;
}

void DeviceTensor::release() noexcept {
  // The allocator refunds the account. free() throws std::logic_error only for a pointer it
  // never gave out, which a DeviceTensor cannot hold, and RunError when it cannot record an
  // event on a stream of record_use (a failed device, or a stream destroyed too early). A
  // destructor cannot report that: the block then stays live, a leak still charged to its
  // account, where the accounts show it.
  if (data_ != nullptr) {
    try {
      allocator_->free(data_);
    } catch (const RunError&) {
    }
  }
  data_ = nullptr;
  account_ = nullptr;
  numel_ = 0;
  shape_.clear();
}

float* DeviceTensor::f32() const {
  if (type_ != DeviceType::f32 || empty()) throw std::logic_error("device tensor is not f32: " + describe());
  return static_cast<float*>(data_);
}

__nv_bfloat16* DeviceTensor::bf16() const {
  if (type_ != DeviceType::bf16 || empty()) throw std::logic_error("device tensor is not bf16: " + describe());
  return static_cast<__nv_bfloat16*>(data_);
}

std::int32_t* DeviceTensor::i32() const {
  if (type_ != DeviceType::i32 || empty()) throw std::logic_error("device tensor is not i32: " + describe());
  return static_cast<std::int32_t*>(data_);
}

void DeviceTensor::record_use(const Stream& stream) {
  if (!empty()) allocator_->record_use(data_, stream.get());
}

void DeviceTensor::charge_to(MemoryAccount* account) {
  if (empty() || account == account_) return;
  allocator_->charge_to(data_, account);
  account_ = account;
}

void DeviceTensor::reshape(std::vector<std::int64_t> shape) {
  if (count_elements(shape) != numel_) {
    throw std::invalid_argument(fmt::format("cannot reshape {} to [{}]", describe(), fmt::join(shape, ",")));
  }
  shape_ = std::move(shape);
}

void DeviceTensor::zero(const Stream& stream) {
  if (empty()) throw std::logic_error("zero() of an empty device tensor");
  GPIPE_CUDA_CHECK(cudaMemsetAsync(data_, 0, static_cast<std::size_t>(bytes()), stream.get()));
}

void DeviceTensor::check_copy(std::size_t count, DeviceType host, const char* direction) const {
  const bool same_type = host == DeviceType::i32 ? type_ == DeviceType::i32 : type_ != DeviceType::i32;
  if (empty() || !same_type || static_cast<std::int64_t>(count) != numel_) {
    throw std::invalid_argument(fmt::format("cannot copy {} host {} values {} device {}", count, element_type_name(host),
                                            direction, describe()));
  }
}

void DeviceTensor::upload(std::span<const float> values, const Stream& stream) {
  check_copy(values.size(), DeviceType::f32, "into");
  const auto size = static_cast<std::size_t>(bytes());
  if (type_ == DeviceType::bf16) {
    std::vector<std::uint16_t> staged(values.size());
    for (std::size_t i = 0; i < staged.size(); ++i) staged[i] = f32_to_bf16_bits(values[i]);
    // From pageable memory cudaMemcpyAsync returns once the source is staged, so `staged` may go.
    GPIPE_CUDA_CHECK(cudaMemcpyAsync(data_, staged.data(), size, cudaMemcpyHostToDevice, stream.get()));
    return;
  }
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(data_, values.data(), size, cudaMemcpyHostToDevice, stream.get()));
}

void DeviceTensor::upload(std::span<const std::int32_t> values, const Stream& stream) {
  check_copy(values.size(), DeviceType::i32, "into");
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(data_, values.data(), static_cast<std::size_t>(bytes()), cudaMemcpyHostToDevice,
                                   stream.get()));
}

void DeviceTensor::download(std::span<float> values, const Stream& stream) const {
  check_copy(values.size(), DeviceType::f32, "from");
  const auto size = static_cast<std::size_t>(bytes());
  if (type_ == DeviceType::bf16) {
    std::vector<std::uint16_t> staged(values.size());
    GPIPE_CUDA_CHECK(cudaMemcpyAsync(staged.data(), data_, size, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    for (std::size_t i = 0; i < staged.size(); ++i) values[i] = bf16_bits_to_f32(staged[i]);
    return;
  }
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(values.data(), data_, size, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
}

void DeviceTensor::download(std::span<std::int32_t> values, const Stream& stream) const {
  check_copy(values.size(), DeviceType::i32, "from");
  GPIPE_CUDA_CHECK(cudaMemcpyAsync(values.data(), data_, static_cast<std::size_t>(bytes()), cudaMemcpyDeviceToHost,
                                   stream.get()));
  stream.synchronize();
}

std::string DeviceTensor::describe() const {
  if (empty()) return "empty device tensor";
  return fmt::format("{}[{}]", element_type_name(type_), fmt::join(shape_, ","));
}

}  // namespace gpipe::exec::cuda
