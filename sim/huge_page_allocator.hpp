// An allocator for the engine's large per-node arrays that asks Linux for
// transparent huge pages (madvise MADV_HUGEPAGE; the default THP mode on
// many systems only backs regions that ask). Each simulation allocates tens
// of MB afresh, and faulting them in 4 KiB at a time cost the engine about a
// third of its time (K=64, M=4096: ~18 ms of ~42 ms; with huge pages ~26 ms
// in all). Small arrays, and systems without MADV_HUGEPAGE, get plain memory.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

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
    if (!huge(bytes)) return std::allocator<T>{}.allocate(n);
    const std::size_t size = rounded(bytes);
    void* p = std::aligned_alloc(kHugePage, size);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE);  // a hint: without it the memory is still good
#endif
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (huge(n * sizeof(T))) {
      std::free(p);
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
  static constexpr bool huge(std::size_t bytes) { return bytes >= kHugePage; }
  static constexpr std::size_t rounded(std::size_t bytes) {
    return (bytes + kHugePage - 1) / kHugePage * kHugePage;
  }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace gpipe::sim
