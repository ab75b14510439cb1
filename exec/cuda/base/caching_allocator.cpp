#include "exec/cuda/base/caching_allocator.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gpipe::exec::cuda {

CachingAllocator::CachingAllocator(DeviceMemory& device) : device_(device) {}

CachingAllocator::~CachingAllocator() {
  try {
    release();
    // Blocks still pending may yet be written by their streams: they are left to the
    // device (a leak beats a free under running work), their events given back.
    for (Pending& block : pending_) {
      for (EventToken event : block.events) device_.release_event(event);
    }
  } catch (...) {  // a destructor must not throw; the process is ending its use of the device anyway
  }
}

std::int64_t CachingAllocator::rounded_size(std::int64_t bytes) {
  if (bytes < 0) throw InputError(fmt::format("device allocation of a negative size ({} bytes)", bytes));
  return std::max<std::int64_t>(1, (bytes + kBlockBytes - 1) / kBlockBytes) * kBlockBytes;
}

void* CachingAllocator::allocate(std::int64_t bytes, MemoryAccount* account, StreamHandle stream) {
  const std::int64_t rounded = rounded_size(bytes);
  void* pointer = nullptr;
  {
    std::unique_lock lock(mutex_);
    poll_pending();
    std::vector<void*>* bin = nullptr;
    if (auto pool = cached_.find(stream); pool != cached_.end()) {
      if (auto found = pool->second.find(rounded); found != pool->second.end()) bin = &found->second;
    }
    if (bin != nullptr && !bin->empty()) {
      pointer = bin->back();
      bin->pop_back();
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
    live_.emplace(pointer, Block{bytes, rounded, account, stream, {}});
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

void CachingAllocator::record_use(void* pointer, StreamHandle stream) {
  std::scoped_lock lock(mutex_);
  const auto it = live_.find(pointer);
  if (it == live_.end()) throw std::logic_error("CachingAllocator::record_use of a pointer that is not live");
  Block& block = it->second;
  if (stream == block.pool || std::ranges::find(block.uses, stream) != block.uses.end()) return;
  block.uses.push_back(stream);
}

void CachingAllocator::free(void* pointer) {
  Block block;
  {
    std::scoped_lock lock(mutex_);
    const auto it = live_.find(pointer);
    if (it == live_.end()) throw std::logic_error("CachingAllocator::free of a pointer it did not allocate");
    // Events first: should one fail, nothing has changed yet and the block stays live.
    std::vector<EventToken> events;
    events.reserve(it->second.uses.size());
    try {
      for (StreamHandle stream : it->second.uses) events.push_back(device_.record_event(stream));
    } catch (...) {
      for (EventToken event : events) device_.release_event(event);
      throw;
    }
    block = std::move(it->second);
    live_.erase(it);
    if (events.empty()) {
      cached_[block.pool][block.rounded].push_back(pointer);
    } else {
      pending_.push_back(Pending{pointer, block.pool, block.rounded, std::move(events)});
      ++stats_.pending_blocks;
    }
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
  std::map<StreamHandle, Bins> cached;
  {
    std::scoped_lock lock(mutex_);
    poll_pending();
    cached.swap(cached_);
  }
  for (auto& [pool, bins] : cached) {
    for (auto& [rounded, pointers] : bins) {
      for (void* pointer : pointers) {
        device_.free(pointer);
        std::scoped_lock lock(mutex_);
        ++stats_.device_frees;
        stats_.reserved_bytes -= rounded;
      }
    }
  }
}

void CachingAllocator::poll_pending() {
  for (std::size_t i = 0; i < pending_.size();) {
    std::vector<EventToken>& events = pending_[i].events;
    // One event not done keeps the block, so the rest need no query yet; each done event is
    // released at once, so a throw from event_done leaves nothing to release twice.
    while (!events.empty() && device_.event_done(events.back())) {
      device_.release_event(events.back());
      events.pop_back();
    }
    if (!events.empty()) {
      ++i;
      continue;
    }
    cached_[pending_[i].pool][pending_[i].rounded].push_back(pending_[i].pointer);
    --stats_.pending_blocks;
    if (i + 1 != pending_.size()) pending_[i] = std::move(pending_.back());  // order does not matter
    pending_.pop_back();
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
