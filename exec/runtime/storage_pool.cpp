#include "exec/runtime/storage_pool.hpp"

#include <algorithm>
#include <new>

namespace gpipe::exec {

namespace {
std::int64_t bytes_of(std::size_t words) { return static_cast<std::int64_t>(words) * 4; }
}  // namespace

StoragePool& StoragePool::instance() {
  // Never destroyed: tensors in static storage may be freed after exit starts.
  static StoragePool* const pool = new StoragePool();
  return *pool;
}

std::uint32_t* StoragePool::take(std::size_t words) {
  words = std::max<std::size_t>(words, 1);
  {
    const std::lock_guard lock(mutex_);
    ++stats_.requests;
    stats_.in_use_bytes += bytes_of(words);
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    auto it = kept_.find(words);
    if (it != kept_.end() && !it->second.empty()) {
      std::uint32_t* block = it->second.back();
      it->second.pop_back();
      stats_.kept_bytes -= bytes_of(words);
      ++stats_.reused;
      return block;
    }
  }
  try {
    return new std::uint32_t[words];
  } catch (...) {
    const std::lock_guard lock(mutex_);
    stats_.in_use_bytes -= bytes_of(words);
    throw;
  }
}

void StoragePool::give_back(std::uint32_t* block, std::size_t words) noexcept {
  if (block == nullptr) return;
  words = std::max<std::size_t>(words, 1);
  {
    const std::lock_guard lock(mutex_);
    stats_.in_use_bytes -= bytes_of(words);
    if (stats_.kept_bytes + bytes_of(words) <= stats_.peak_in_use_bytes) {
      try {
        kept_[words].push_back(block);
        stats_.kept_bytes += bytes_of(words);
        return;
      } catch (...) {  // no memory for the list: free the block instead
      }
    }
  }
  delete[] block;
}

void StoragePool::trim() noexcept {
  std::map<std::size_t, std::vector<std::uint32_t*>> kept;
  {
    const std::lock_guard lock(mutex_);
    kept.swap(kept_);
    stats_.kept_bytes = 0;
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
  }
  for (auto& [words, blocks] : kept) {
    for (std::uint32_t* block : blocks) delete[] block;
  }
}

StoragePool::Stats StoragePool::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace gpipe::exec
