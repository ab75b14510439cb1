#include "exec/cuda/caching_allocator.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include <fmt/format.h>

#include "schedules/error.hpp"

namespace gpipe::exec::cuda {

CachingAllocator::CachingAllocator(DeviceMemory& device) : device_(device) {}

CachingAllocator::~CachingAllocator() {
  try {
    release();
  } catch (...) {  // a destructor must not throw; the process is ending its use of the device anyway
  }
}

std::int64_t CachingAllocator::rounded_size(std::int64_t bytes) {
  if (bytes < 0) throw InputError(fmt::format("device allocation of a negative size ({} bytes)", bytes));
  return std::max<std::int64_t>(1, (bytes + kBlockBytes - 1) / kBlockBytes) * kBlockBytes;
}

void* CachingAllocator::allocate(std::int64_t bytes, MemoryAccount* account) {
  const std::int64_t rounded = rounded_size(bytes);
  void* pointer = nullptr;
  {
    std::unique_lock lock(mutex_);
    if (auto bin = cached_.find(rounded); bin != cached_.end() && !bin->second.empty()) {
      pointer = bin->second.back();
      bin->second.pop_back();
      ++stats_.cache_hits;
    } else {
      // The device call may be slow (it synchronises): other threads' cache hits need not wait for it.
      lock.unlock();
      pointer = device_.allocate(rounded);
      std::int64_t used = 0;
      try {
        used = device_.usage().used_bytes;
      } catch (...) {
        device_.free(pointer);  // not yet counted anywhere: give it back rather than leak it
        throw;
      }
      lock.lock();
      ++stats_.device_allocations;
      stats_.reserved_bytes += rounded;
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
      note_device_usage(used);
    }
    live_.emplace(pointer, Block{bytes, rounded, account});
    ++stats_.allocations;
    ++stats_.live_allocations;
    stats_.requested_bytes += bytes;
    stats_.allocated_bytes += rounded;
    stats_.peak_requested_bytes = std::max(stats_.peak_requested_bytes, stats_.requested_bytes);
  }
  // Outside the lock: the account's observer must never run under the allocator's lock.
  if (account != nullptr) account->charge(bytes);
  return pointer;
}

void CachingAllocator::free(void* pointer) {
  Block block;
  {
    std::scoped_lock lock(mutex_);
    const auto it = live_.find(pointer);
    if (it == live_.end()) throw std::logic_error("CachingAllocator::free of a pointer it did not allocate");
    block = it->second;
    live_.erase(it);
    cached_[block.rounded].push_back(pointer);
    ++stats_.frees;
    --stats_.live_allocations;
    stats_.requested_bytes -= block.requested;
    stats_.allocated_bytes -= block.rounded;
  }
  if (block.account != nullptr) block.account->refund(block.requested);
}

void CachingAllocator::charge_to(void* pointer, MemoryAccount* account) {
  Block before;
  {
    std::scoped_lock lock(mutex_);
    const auto it = live_.find(pointer);
    if (it == live_.end()) throw std::logic_error("CachingAllocator::charge_to of a pointer it did not allocate");
    before = it->second;
    it->second.account = account;
  }
  if (before.account == account) return;
  if (account != nullptr) account->charge(before.requested);
  if (before.account != nullptr) before.account->refund(before.requested);
}

void CachingAllocator::release() {
  std::map<std::int64_t, std::vector<void*>> cached;
  {
    std::scoped_lock lock(mutex_);
    cached.swap(cached_);
  }
  for (auto& [rounded, pointers] : cached) {
    for (void* pointer : pointers) {
      device_.free(pointer);
      std::scoped_lock lock(mutex_);
      ++stats_.device_frees;
      stats_.reserved_bytes -= rounded;
    }
  }
}

AllocatorStats CachingAllocator::stats() const {
  std::scoped_lock lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peaks() {
  std::scoped_lock lock(mutex_);
  stats_.peak_requested_bytes = stats_.requested_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
  device_peak_used_ = 0;
}

std::int64_t CachingAllocator::device_used_bytes() {
  const std::int64_t used = device_.usage().used_bytes;
  std::scoped_lock lock(mutex_);
  note_device_usage(used);
  return used;
}

std::int64_t CachingAllocator::device_peak_used_bytes() const {
  std::scoped_lock lock(mutex_);
  return device_peak_used_;
}

void CachingAllocator::note_device_usage(std::int64_t used) {
  device_peak_used_ = std::max(device_peak_used_, used);
}

}  // namespace gpipe::exec::cuda
