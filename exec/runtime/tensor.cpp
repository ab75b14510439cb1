#include "exec/runtime/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpipe::exec {

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::f32: return "f32";
    case ElementType::i32: return "i32";
    case ElementType::u8: return "u8";
  }
  return "?";
}

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument(fmt::format("negative tensor dimension {}", d));
    count *= d;
  }
  return count;
}

Tensor::Tensor(Uninitialized, std::vector<std::int64_t> shape, ElementType type,
               MemoryAccount* account)
    : shape_(std::move(shape)), type_(type), numel_(element_count(shape_)) {
  // At least one word, so that a 0-sized tensor still reads as not empty.
  const auto words = static_cast<std::size_t>(std::max<std::int64_t>((bytes() + 3) / 4, 1));
  data_ = {StoragePool::instance().take(words), PoolDeleter{words}};
  charge_to(account);
}

Tensor::Tensor(std::vector<std::int64_t> shape, ElementType type, MemoryAccount* account)
    : Tensor(Uninitialized{}, std::move(shape), type, account) {
  std::fill_n(data_.get(), data_.get_deleter().words, 0U);
}

Tensor Tensor::uninitialized(std::vector<std::int64_t> shape, ElementType type,
                             MemoryAccount* account) {
  Tensor t(Uninitialized{}, std::move(shape), type, account);
#ifndef NDEBUG
  std::fill_n(t.data_.get(), t.data_.get_deleter().words, 0x7fc00000U);  // a quiet NaN
#endif
  return t;
}

Tensor::~Tensor() { release(); }

Tensor::Tensor(Tensor&& other) noexcept
    : shape_(std::move(other.shape_)),
      type_(other.type_),
      numel_(std::exchange(other.numel_, 0)),
      data_(std::move(other.data_)),
      account_(std::exchange(other.account_, nullptr)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    release();
    shape_ = std::move(other.shape_);
    type_ = other.type_;
    numel_ = std::exchange(other.numel_, 0);
    data_ = std::move(other.data_);
    account_ = std::exchange(other.account_, nullptr);
  }
  return *this;
}

void Tensor::release() {
  if (account_ != nullptr) account_->refund(bytes());
  account_ = nullptr;
  data_.reset();
  numel_ = 0;
  shape_.clear();
}

std::span<float> Tensor::f32() {
  if (type_ != ElementType::f32 || empty()) throw std::logic_error("tensor is not f32: " + describe());
  return {reinterpret_cast<float*>(data_.get()), static_cast<std::size_t>(numel_)};
}

std::span<const float> Tensor::f32() const {
  if (type_ != ElementType::f32 || empty()) throw std::logic_error("tensor is not f32: " + describe());
  return {reinterpret_cast<const float*>(data_.get()), static_cast<std::size_t>(numel_)};
}

std::span<std::int32_t> Tensor::i32() {
  if (type_ != ElementType::i32 || empty()) throw std::logic_error("tensor is not i32: " + describe());
  return {reinterpret_cast<std::int32_t*>(data_.get()), static_cast<std::size_t>(numel_)};
}

std::span<const std::int32_t> Tensor::i32() const {
  if (type_ != ElementType::i32 || empty()) throw std::logic_error("tensor is not i32: " + describe());
  return {reinterpret_cast<const std::int32_t*>(data_.get()), static_cast<std::size_t>(numel_)};
}

std::span<std::uint8_t> Tensor::u8() {
  if (type_ != ElementType::u8 || empty()) throw std::logic_error("tensor is not u8: " + describe());
  return {reinterpret_cast<std::uint8_t*>(data_.get()), static_cast<std::size_t>(numel_)};
}

std::span<const std::uint8_t> Tensor::u8() const {
  if (type_ != ElementType::u8 || empty()) throw std::logic_error("tensor is not u8: " + describe());
  return {reinterpret_cast<const std::uint8_t*>(data_.get()), static_cast<std::size_t>(numel_)};
}

void Tensor::charge_to(MemoryAccount* account) {
  if (account == account_) return;
  if (account_ != nullptr) account_->refund(bytes());
  account_ = account;
  if (account_ != nullptr) account_->charge(bytes());
}

Tensor Tensor::clone(MemoryAccount* account) const {
  if (empty()) return {};
  Tensor copy = uninitialized(shape_, type_, account);
  std::memcpy(copy.data_.get(), data_.get(), static_cast<std::size_t>(bytes()));
  return copy;
}

Tensor Tensor::slice_rows(std::int64_t begin, std::int64_t count, MemoryAccount* account) const {
  if (shape_.empty() || begin < 0 || count < 0 || begin + count > shape_[0]) {
    throw std::out_of_range(fmt::format("rows [{}, {}) of {}", begin, begin + count, describe()));
  }
  std::vector<std::int64_t> shape = shape_;
  shape[0] = count;
  Tensor rows = uninitialized(shape, type_, account);
  const std::int64_t row = shape_[0] == 0 ? 0 : bytes() / shape_[0];  // bytes a row
  std::memcpy(rows.data_.get(), reinterpret_cast<const char*>(data_.get()) + begin * row,
              static_cast<std::size_t>(count * row));
  return rows;
}

void Tensor::reshape(std::vector<std::int64_t> shape) {
  if (element_count(shape) != numel_) {
    throw std::invalid_argument(fmt::format("cannot reshape {} to [{}]", describe(), fmt::join(shape, ",")));
  }
  shape_ = std::move(shape);
}

std::string Tensor::describe() const {
  if (empty()) return "empty tensor";
  return fmt::format("{}[{}]", element_type_name(type_), fmt::join(shape_, ","));
}

}  // namespace gpipe::exec
