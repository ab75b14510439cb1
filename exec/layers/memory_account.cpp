#include "exec/layers/memory_account.hpp"

#include <algorithm>

namespace gpipe::exec {

void MemoryAccount::charge(std::int64_t bytes) {
  std::scoped_lock lock(mutex_);
  bytes_ += bytes;
  peak_ = std::max(peak_, bytes_);
  if (observer_) observer_(bytes_);
}

void MemoryAccount::refund(std::int64_t bytes) {
  std::scoped_lock lock(mutex_);
  bytes_ -= bytes;
  if (observer_) observer_(bytes_);
}

std::int64_t MemoryAccount::bytes() const {
  std::scoped_lock lock(mutex_);
  return bytes_;
}

std::int64_t MemoryAccount::peak() const {
  std::scoped_lock lock(mutex_);
  return peak_;
}

void MemoryAccount::reset_peak() {
  std::scoped_lock lock(mutex_);
  peak_ = bytes_;
}

void MemoryAccount::set_observer(Observer observer) {
  std::scoped_lock lock(mutex_);
  observer_ = std::move(observer);
}

}  // namespace gpipe::exec
