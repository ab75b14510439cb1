// A dense, row-major tensor of fp32 values, int32 indices (token ids,
// targets) or bytes (dropout's masks), owning its storage. While charged to a MemoryAccount it counts its
// bytes there; moving the tensor moves the charge, freeing it refunds it.
// Move-only, so that a stashed activation is never silently duplicated:
// copies are explicit (clone()).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "exec/layers/memory_account.hpp"
#include "exec/runtime/storage_pool.hpp"

namespace gpipe::exec {

enum class ElementType : std::uint8_t { f32, i32, u8 };
[[nodiscard]] const char* element_type_name(ElementType type);  // "f32", "i32", "u8"
[[nodiscard]] constexpr std::int64_t element_bytes(ElementType type) {  // 4, 4, 1
  return type == ElementType::u8 ? 1 : 4;
}

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled storage of `shape`, charged to `account` when it is not null.
  Tensor(std::vector<std::int64_t> shape, ElementType type = ElementType::f32,
         MemoryAccount* account = nullptr);
  // Storage of `shape` left as it was, for a tensor that is written whole
  // before it is read (a kernel's output): no pass over it to zero it. In
  // builds with asserts it is filled with NaN, so that a read of an unwritten
  // element shows in the results.
  [[nodiscard]] static Tensor uninitialized(std::vector<std::int64_t> shape,
                                            ElementType type = ElementType::f32,
                                            MemoryAccount* account = nullptr);
  ~Tensor();
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  [[nodiscard]] bool empty() const { return data_ == nullptr; }
  [[nodiscard]] ElementType type() const { return type_; }
  [[nodiscard]] const std::vector<std::int64_t>& shape() const { return shape_; }
  [[nodiscard]] std::int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i)); }
  [[nodiscard]] std::int64_t numel() const { return numel_; }
  [[nodiscard]] std::int64_t bytes() const { return numel_ * element_bytes(type_); }

  // The values; throws std::logic_error when the type differs.
  [[nodiscard]] std::span<float> f32();
  [[nodiscard]] std::span<const float> f32() const;
  [[nodiscard]] std::span<std::int32_t> i32();
  [[nodiscard]] std::span<const std::int32_t> i32() const;
  [[nodiscard]] std::span<std::uint8_t> u8();
  [[nodiscard]] std::span<const std::uint8_t> u8() const;
  [[nodiscard]] float* data() { return f32().data(); }
  [[nodiscard]] const float* data() const { return f32().data(); }

  // Moves the charge to another account (nullptr: charged to none).
  void charge_to(MemoryAccount* account);
  [[nodiscard]] MemoryAccount* account() const { return account_; }

  // A copy with the same shape and values, charged to `account`.
  [[nodiscard]] Tensor clone(MemoryAccount* account = nullptr) const;
  // Rows [begin, begin + count) of the first dimension, copied, charged to `account`.
  [[nodiscard]] Tensor slice_rows(std::int64_t begin, std::int64_t count,
                                  MemoryAccount* account = nullptr) const;
  // Reinterprets the shape; the element count must not change.
  void reshape(std::vector<std::int64_t> shape);

  // "f32[4,16]", for error messages.
  [[nodiscard]] std::string describe() const;

 private:
  struct Uninitialized {};
  Tensor(Uninitialized, std::vector<std::int64_t> shape, ElementType type, MemoryAccount* account);
  void release();

  std::vector<std::int64_t> shape_;
  ElementType type_ = ElementType::f32;
  std::int64_t numel_ = 0;
  // The elements in 4-byte words (a u8 tensor's rounded up), from the StoragePool.
  std::unique_ptr<std::uint32_t[], PoolDeleter> data_;
  MemoryAccount* account_ = nullptr;
};

// The product of the dimensions; throws std::invalid_argument for a negative one.
[[nodiscard]] std::int64_t element_count(const std::vector<std::int64_t>& shape);

}  // namespace gpipe::exec
