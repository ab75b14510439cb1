// The large blocks a thread has freed, kept for its next simulation
// (huge_page_allocator.hpp). A sweep builds a graph per configuration, and a
// block given back to the system faults its pages in afresh next time: the
// kernel clearing them was a tenth of a million-configuration sweep. A block
// is kept by its size, which the allocator rounds up to a power of two so
// that the next request of about that size finds it, and a thread keeps at
// most kKeptBytes; the rest is freed as before.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <vector>

namespace gpipe::sim {

class HugeBlockCache {
 public:
  static constexpr std::size_t kKeptBytes = std::size_t{256} << 20;

  HugeBlockCache() = default;
  HugeBlockCache(const HugeBlockCache&) = delete;
  HugeBlockCache& operator=(const HugeBlockCache&) = delete;
  ~HugeBlockCache() {
    for (const Block& b : blocks_) std::free(b.memory);
  }

  // A kept block of exactly `size` bytes, no longer kept; nullptr if none.
  [[nodiscard]] void* take(std::size_t size) {
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      if (blocks_[i].size != size) continue;
      void* memory = blocks_[i].memory;
      blocks_[i] = blocks_.back();
      blocks_.pop_back();
      kept_ -= size;
      return memory;
    }
    return nullptr;
  }

  // Keeps a block from std::aligned_alloc; false (and the caller frees it)
  // when that would keep more than kKeptBytes.
  [[nodiscard]] bool keep(void* memory, std::size_t size) {
    if (kept_ + size > kKeptBytes) return false;
    blocks_.push_back({memory, size});
    kept_ += size;
    return true;
  }

  [[nodiscard]] std::size_t kept_bytes() const { return kept_; }

  // This thread's cache.
  [[nodiscard]] static HugeBlockCache& of_this_thread() {
    thread_local HugeBlockCache cache;
    return cache;
  }

 private:
  struct Block {
    void* memory;
    std::size_t size;
  };
  std::vector<Block> blocks_;
  std::size_t kept_ = 0;
};

}  // namespace gpipe::sim
