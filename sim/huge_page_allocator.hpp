// An allocator for the engine's large per-node arrays that asks Linux for
// transparent huge pages (madvise MADV_HUGEPAGE; the default THP mode on
// many systems only backs regions that ask). Each simulation allocates tens
// of MB afresh, and faulting them in 4 KiB at a time cost the engine about a
// third of its time (K=64, M=4096: ~18 ms of ~42 ms; with huge pages ~26 ms
// in all). Small arrays, and systems without MADV_HUGEPAGE, get plain memory.
// A freed block of 64 KiB or more stays with its thread for the next
// simulation (huge_block_cache.hpp), its pages still in: malloc gave such
// blocks back and a sweep faulted them in again for every configuration.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/huge_block_cache.hpp"

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace gpipe::sim {

template <class T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: allocators rebind implicitly

  [[nodiscard]] T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (!kept(bytes)) return std::allocator<T>{}.allocate(n);
    const std::size_t size = rounded(bytes);
    if (void* memory = HugeBlockCache::of_this_thread().take(size)) return static_cast<T*>(memory);
    void* p = std::aligned_alloc(size >= kHugePage ? kHugePage : kLine, size);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (size >= kHugePage) (void)madvise(p, size, MADV_HUGEPAGE);  // a hint: without it the memory is still good
#endif
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (kept(n * sizeof(T))) {
      if (!HugeBlockCache::of_this_thread().keep(p, rounded(n * sizeof(T)))) std::free(p);
    } else {
      std::allocator<T>{}.deallocate(p, n);
    }
  }

  // resize() leaves new elements of a trivial type unset instead of zeroing
  // them: the engine writes each node's entries before it reads them, and
  // fills with assign() or a value where it needs one. (Zeroing what is then
  // overwritten was a tenth of building a graph.)
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }

 private:
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kSmallest = std::size_t{64} << 10;  // below: plain memory
  static constexpr std::size_t kLine = 64;
  static constexpr bool kept(std::size_t bytes) { return bytes >= kSmallest; }
  // A power of two, 64 KiB or more: the sizes a thread's cache keeps blocks by.
  static constexpr std::size_t rounded(std::size_t bytes) {
    std::size_t size = kSmallest;
    while (size < bytes) size *= 2;
    return size;
  }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace gpipe::sim
