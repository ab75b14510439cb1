// Large blocks freed by the engine stay with their thread for the next
// simulation, by size and within a bound; small arrays are plain memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "sim/huge_block_cache.hpp"
#include "sim/huge_page_allocator.hpp"

namespace gpipe::sim {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(HugeBlockCache, GivesBackAKeptBlockOfTheSameSizeOnce) {
  HugeBlockCache cache;
  void* a = std::aligned_alloc(2 * kMiB, 4 * kMiB);
  void* b = std::aligned_alloc(2 * kMiB, 8 * kMiB);
  ASSERT_TRUE(cache.keep(a, 4 * kMiB));
  ASSERT_TRUE(cache.keep(b, 8 * kMiB));
  EXPECT_EQ(cache.kept_bytes(), 12 * kMiB);
  EXPECT_EQ(cache.take(2 * kMiB), nullptr);
  EXPECT_EQ(cache.take(8 * kMiB), b);
  EXPECT_EQ(cache.take(8 * kMiB), nullptr);
  EXPECT_EQ(cache.kept_bytes(), 4 * kMiB);
  std::free(b);  // a is freed with the cache
}

TEST(HugeBlockCache, KeepsNoMoreThanItsBound) {
  HugeBlockCache cache;
  const std::size_t half = HugeBlockCache::kKeptBytes / 2;
  void* a = std::aligned_alloc(2 * kMiB, half);
  void* b = std::aligned_alloc(2 * kMiB, half);
  void* c = std::aligned_alloc(2 * kMiB, 2 * kMiB);
  ASSERT_TRUE(cache.keep(a, half));
  ASSERT_TRUE(cache.keep(b, half));
  EXPECT_FALSE(cache.keep(c, 2 * kMiB));
  EXPECT_EQ(cache.kept_bytes(), HugeBlockCache::kKeptBytes);
  std::free(c);
}

TEST(HugePageAllocator, ABigVectorFindsTheBlockTheLastOneFreed) {
  // On a thread of its own, so that its cache starts empty.
  std::thread([] {
    const std::int64_t* first = nullptr;
    {
      BigVector<std::int64_t> v(3 * kMiB / sizeof(std::int64_t));  // 3 MiB: a 4 MiB block
      first = v.data();
    }
    EXPECT_EQ(HugeBlockCache::of_this_thread().kept_bytes(), 4 * kMiB);
    BigVector<std::int64_t> again(4 * kMiB / sizeof(std::int64_t));  // 4 MiB: the same class
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(HugeBlockCache::of_this_thread().kept_bytes(), 0u);
    { BigVector<int> small(1000); }  // 4 KB: plain memory, never kept
    EXPECT_EQ(HugeBlockCache::of_this_thread().kept_bytes(), 0u);
    { BigVector<int> medium(20'000); }  // 80 KB: kept as 128 KiB
    EXPECT_EQ(HugeBlockCache::of_this_thread().kept_bytes(), 128u << 10);
  }).join();
}

}  // namespace
}  // namespace gpipe::sim
