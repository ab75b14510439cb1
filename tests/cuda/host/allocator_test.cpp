// The caching allocator's accounting, driven through FakeDeviceMemory (host
// memory posing as a GPU): exact requested bytes and peaks, reuse of freed
// blocks, no device frees until release(), a MemoryAccount charged with the
// exact bytes, and a thread-safety smoke test. DeviceTensor's charges (which
// need no device until data is copied) and the host bf16 conversion are here
// too, since both are about what a device tensor holds.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/layers/memory_account.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec::cuda {
namespace {

TEST(CachingAllocator, RoundsToWholeBlocksOf512Bytes) {
  EXPECT_EQ(CachingAllocator::rounded_size(0), 512);
  EXPECT_EQ(CachingAllocator::rounded_size(1), 512);
  EXPECT_EQ(CachingAllocator::rounded_size(512), 512);
  EXPECT_EQ(CachingAllocator::rounded_size(513), 1024);
  EXPECT_EQ(CachingAllocator::rounded_size(1'000'000), 1'000'448);
  EXPECT_EQ(testing::error_of([] { (void)CachingAllocator::rounded_size(-1); }),
            "device allocation of a negative size (-1 bytes)");
}

TEST(CachingAllocator, CountsExactRequestedBytesAndPeaks) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* a = allocator.allocate(100);
  void* b = allocator.allocate(1000);
  void* c = allocator.allocate(513);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.requested_bytes, 1613);
  EXPECT_EQ(stats.peak_requested_bytes, 1613);
  EXPECT_EQ(stats.allocated_bytes, 512 + 1024 + 1024);
  EXPECT_EQ(stats.reserved_bytes, 2560);
  EXPECT_EQ(stats.live_allocations, 3);
  EXPECT_EQ(stats.device_allocations, 3);

  allocator.free(b);
  stats = allocator.stats();
  EXPECT_EQ(stats.requested_bytes, 613);
  EXPECT_EQ(stats.peak_requested_bytes, 1613);
  EXPECT_EQ(stats.allocated_bytes, 1536);
  EXPECT_EQ(stats.reserved_bytes, 2560);  // kept in the cache
  EXPECT_EQ(stats.frees, 1);

  allocator.reset_peaks();
  EXPECT_EQ(allocator.stats().peak_requested_bytes, 613);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 2560);
  allocator.free(a);
  allocator.free(c);
  EXPECT_EQ(allocator.stats().requested_bytes, 0);
  EXPECT_EQ(allocator.stats().peak_requested_bytes, 613);
}

TEST(CachingAllocator, ReusesAFreedBlockOfTheSameRoundedSize) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* first = allocator.allocate(1000);
  allocator.free(first);
  void* again = allocator.allocate(600);  // also one 1024-byte block
  EXPECT_EQ(again, first);
  void* other = allocator.allocate(100);  // a 512-byte block: none cached
  EXPECT_NE(other, first);
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(stats.device_allocations, 2);
  EXPECT_EQ(stats.allocations, 3);
  EXPECT_EQ(stats.requested_bytes, 700);
  EXPECT_EQ(device.allocate_calls(), 2);
  allocator.free(again);
  allocator.free(other);
}

TEST(CachingAllocator, ReturnsNothingToTheDeviceUntilRelease) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  std::vector<void*> blocks;
  for (int i = 1; i <= 10; ++i) blocks.push_back(allocator.allocate(i * 700));
  for (void* block : blocks) allocator.free(block);
  EXPECT_EQ(device.free_calls(), 0);
  EXPECT_EQ(device.live_blocks(), 10);
  EXPECT_EQ(allocator.stats().device_frees, 0);

  void* kept = allocator.allocate(700);  // live across release(): stays
  allocator.release();
  EXPECT_EQ(device.free_calls(), 9);
  EXPECT_EQ(device.live_blocks(), 1);
  EXPECT_EQ(allocator.stats().device_frees, 9);
  EXPECT_EQ(allocator.stats().reserved_bytes, 1024);
  EXPECT_EQ(device.usage().used_bytes, 1024);
  allocator.free(kept);
  allocator.release();
  EXPECT_EQ(device.live_blocks(), 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 512 * (2 + 3 + 5 + 6 + 7 + 9 + 10 + 11 + 13 + 14));
}

TEST(CachingAllocator, ChargesTheAccountWithExactBytes) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  MemoryAccount account;
  MemoryAccount other;
  void* a = allocator.allocate(100, &account);
  void* b = allocator.allocate(1000, &account);
  void* uncharged = allocator.allocate(4096);
  EXPECT_EQ(account.bytes(), 1100);
  EXPECT_EQ(account.peak(), 1100);

  allocator.charge_to(b, &other);
  EXPECT_EQ(account.bytes(), 100);
  EXPECT_EQ(other.bytes(), 1000);
  allocator.free(b);
  EXPECT_EQ(other.bytes(), 0);
  allocator.free(a);
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_EQ(account.peak(), 1100);
  // A cached block charges nothing: the account follows the live allocations only.
  void* reused = allocator.allocate(1000, &account);
  EXPECT_EQ(account.bytes(), 1000);
  allocator.free(reused);
  allocator.free(uncharged);
  EXPECT_EQ(account.bytes(), 0);
}

TEST(CachingAllocator, SamplesTheDevicesOwnUsage) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* a = allocator.allocate(3000);
  EXPECT_EQ(allocator.device_peak_used_bytes(), 3072);  // sampled when the reservation grew
  allocator.free(a);
  allocator.release();
  EXPECT_EQ(allocator.device_used_bytes(), 0);
  EXPECT_EQ(allocator.device_peak_used_bytes(), 3072);
  allocator.reset_peaks();
  EXPECT_EQ(allocator.device_peak_used_bytes(), 0);
}

TEST(CachingAllocator, OutOfDeviceMemoryIsARunErrorAndChangesNothing) {
  FakeDeviceMemory device(2048);
  CachingAllocator allocator(device);
  MemoryAccount account;
  void* a = allocator.allocate(2000, &account);
  EXPECT_THROW((void)allocator.allocate(1, &account), RunError);
  EXPECT_EQ(account.bytes(), 2000);
  EXPECT_EQ(allocator.stats().requested_bytes, 2000);
  EXPECT_EQ(allocator.stats().live_allocations, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 2048);
  allocator.free(a);
}

TEST(CachingAllocator, FreeingAForeignPointerIsALogicError) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  int local = 0;
  EXPECT_THROW(allocator.free(&local), std::logic_error);
  void* a = allocator.allocate(8);
  allocator.free(a);
  EXPECT_THROW(allocator.free(a), std::logic_error);  // a double free
}

TEST(CachingAllocator, ThreadsAllocatingAndFreeingKeepExactTotals) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  MemoryAccount account;
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  const std::int64_t sizes[] = {100, 1000, 5000};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        void* first = allocator.allocate(sizes[(i + t) % 3], &account);
        void* second = allocator.allocate(sizes[(i * 7 + t) % 3], &account);
        allocator.free(first);
        allocator.free(second);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocations, 2 * kThreads * kRounds);
  EXPECT_EQ(stats.frees, 2 * kThreads * kRounds);
  EXPECT_EQ(stats.cache_hits + stats.device_allocations, stats.allocations);
  EXPECT_EQ(stats.requested_bytes, 0);
  EXPECT_EQ(stats.live_allocations, 0);
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_LE(account.peak(), kThreads * 2 * 5000);  // each thread holds at most two blocks
  EXPECT_LE(stats.peak_requested_bytes, kThreads * 2 * 5000);
  EXPECT_EQ(device.live_blocks(), stats.device_allocations);
  EXPECT_EQ(device.free_calls(), 0);
  allocator.release();
  EXPECT_EQ(device.live_blocks(), 0);
}

TEST(DeviceTensor, ChargesExactBytesWhileAlive) {
  FakeDeviceMemory device;  // no data is copied, so the fake device is enough
  CachingAllocator allocator(device);
  MemoryAccount account;
  {
    DeviceTensor bf16(allocator, {3, 5}, DeviceType::bf16, &account);
    DeviceTensor f32(allocator, {3, 5}, DeviceType::f32, &account);
    EXPECT_EQ(bf16.bytes(), 30);
    EXPECT_EQ(account.bytes(), 30 + 60);
    EXPECT_EQ(bf16.describe(), "bf16[3,5]");
    EXPECT_THROW((void)bf16.f32(), std::logic_error);

    DeviceTensor moved = std::move(f32);
    EXPECT_TRUE(f32.empty());  // NOLINT(bugprone-use-after-move): moved-from is documented empty
    EXPECT_EQ(account.bytes(), 90);
    moved.charge_to(nullptr);
    EXPECT_EQ(account.bytes(), 30);
    moved.reshape({15});
    EXPECT_EQ(moved.describe(), "f32[15]");
    EXPECT_THROW(moved.reshape({4, 4}), std::invalid_argument);
  }
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_EQ(account.peak(), 90);
  EXPECT_EQ(allocator.stats().requested_bytes, 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 1024);  // both blocks cached for the next step
}

TEST(DeviceTensor, Bf16ConversionRoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0F), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(-2.0F), 0xC000);
  EXPECT_EQ(bf16_bits_to_f32(0x3F80), 1.0F);
  // 1 + 2^-8 lies halfway between bf16 1.0 and 1 + 2^-7: ties go to the even one (1.0).
  EXPECT_EQ(f32_to_bf16_bits(1.0F + 0x1p-8F), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
  EXPECT_EQ(f32_to_bf16_bits(1.0F + 3 * 0x1p-8F), 0x3F82);
  EXPECT_EQ(f32_to_bf16_bits(1.0F + 0x1p-8F + 0x1p-20F), 0x3F81);  // above halfway
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // overflows to infinity
  for (float value : {0.0F, -0.5F, 3.140625F, 1e-30F, 65280.0F}) {
    const float back = bf16_bits_to_f32(f32_to_bf16_bits(value));
    EXPECT_LE(std::fabs(back - value), std::fabs(value) * 0x1p-8F) << value;
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
