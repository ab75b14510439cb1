// The caching allocator's stream pools and record_use, driven through
// FakeDeviceMemory, whose events stay "not done" until complete_events(): a
// block never crosses pools, a block used on another stream is not handed out
// again before that stream's work is done (and is after), the accounts are
// refunded at free time, and threads allocating, recording and freeing keep
// exact totals without ever getting a block still in use.
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/layers/memory_account.hpp"

namespace gpipe::exec::cuda {
namespace {

// Stream handles are only compared, never dereferenced, by the allocator and the fake device.
StreamHandle fake_stream(int index) {
  return reinterpret_cast<StreamHandle>(static_cast<std::uintptr_t>(0x1000 * (index + 1)));  // NOLINT
}

TEST(CachingAllocatorStreams, PoolsOfDifferentStreamsShareNoBlocks) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* on_first = allocator.allocate(1000, nullptr, fake_stream(1));
  allocator.free(on_first);
  void* on_second = allocator.allocate(1000, nullptr, fake_stream(2));
  EXPECT_NE(on_second, on_first);
  void* on_default = allocator.allocate(1000);  // the nullptr pool is a pool of its own
  EXPECT_NE(on_default, on_first);
  EXPECT_EQ(allocator.allocate(600, nullptr, fake_stream(1)), on_first);  // same pool, same rounded size
  allocator.free(on_second);
  allocator.free(on_default);
  EXPECT_EQ(allocator.allocate(1000), on_default);
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.device_allocations, 3);
  EXPECT_EQ(stats.cache_hits, 2);
  EXPECT_EQ(stats.requested_bytes, 1600);
  EXPECT_EQ(stats.reserved_bytes, 3 * 1024);
  EXPECT_EQ(device.record_calls(), 0);  // no recorded use, no event
  allocator.free(on_first);
  allocator.free(on_default);
  allocator.release();
  EXPECT_EQ(device.live_blocks(), 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
}

TEST(CachingAllocatorStreams, ABlockUsedOnAnotherStreamWaitsForItsEvent) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  MemoryAccount account;
  void* used = allocator.allocate(1000, &account, fake_stream(1));
  allocator.record_use(used, fake_stream(2));
  allocator.record_use(used, fake_stream(2));  // the same stream twice is one use
  allocator.free(used);
  EXPECT_EQ(device.record_calls(), 1);
  EXPECT_EQ(device.pending_events(), 1);

  // Refunded and no longer live at once; still reserved, and not reusable.
  EXPECT_EQ(account.bytes(), 0);
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.requested_bytes, 0);
  EXPECT_EQ(stats.allocated_bytes, 0);
  EXPECT_EQ(stats.live_allocations, 0);
  EXPECT_EQ(stats.frees, 1);
  EXPECT_EQ(stats.reserved_bytes, 1024);
  EXPECT_EQ(stats.pending_blocks, 1);

  void* meanwhile = allocator.allocate(1000, nullptr, fake_stream(1));
  EXPECT_NE(meanwhile, used);
  EXPECT_EQ(allocator.stats().device_allocations, 2);
  EXPECT_EQ(allocator.stats().pending_blocks, 1);

  device.complete_events();
  void* after = allocator.allocate(1000, &account, fake_stream(1));
  EXPECT_EQ(after, used);
  stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 0);
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(stats.device_allocations, 2);
  EXPECT_EQ(stats.requested_bytes, 2000);
  EXPECT_EQ(account.bytes(), 1000);
  EXPECT_EQ(device.held_events(), 0);  // the done event was given back
  allocator.free(after);
  allocator.free(meanwhile);
}

TEST(CachingAllocatorStreams, EveryUsedStreamGetsAnEventAndAllMustBeDone) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* used = allocator.allocate(100, nullptr, fake_stream(1));
  allocator.record_use(used, fake_stream(2));
  allocator.record_use(used, fake_stream(3));
  allocator.record_use(used, nullptr);  // the legacy default stream: another stream here
  allocator.free(used);
  EXPECT_EQ(device.record_calls(), 3);
  EXPECT_EQ(device.held_events(), 3);
  EXPECT_NE(allocator.allocate(100, nullptr, fake_stream(1)), used);
  device.complete_events();
  EXPECT_EQ(allocator.allocate(100, nullptr, fake_stream(1)), used);
  EXPECT_EQ(device.held_events(), 0);
  EXPECT_EQ(allocator.stats().live_allocations, 2);
}

TEST(CachingAllocatorStreams, RecordingTheOwnStreamNeedsNoEvent) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* block = allocator.allocate(100, nullptr, fake_stream(1));
  allocator.record_use(block, fake_stream(1));
  allocator.free(block);
  void* on_default = allocator.allocate(100);
  allocator.record_use(on_default, nullptr);  // its own pool's stream, nullptr as well
  allocator.free(on_default);
  EXPECT_EQ(device.record_calls(), 0);
  EXPECT_EQ(allocator.stats().pending_blocks, 0);
  EXPECT_EQ(allocator.allocate(100, nullptr, fake_stream(1)), block);
  EXPECT_EQ(allocator.allocate(100), on_default);
  EXPECT_EQ(allocator.stats().cache_hits, 2);
  allocator.free(block);
  allocator.free(on_default);
}

TEST(CachingAllocatorStreams, ReleaseKeepsPendingBlocks) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  void* used = allocator.allocate(1000, nullptr, fake_stream(1));
  void* unused = allocator.allocate(100, nullptr, fake_stream(1));
  allocator.record_use(used, fake_stream(2));
  allocator.free(used);
  allocator.free(unused);
  allocator.release();
  EXPECT_EQ(device.free_calls(), 1);  // only the cached block
  EXPECT_EQ(device.live_blocks(), 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 1024);
  EXPECT_EQ(allocator.stats().pending_blocks, 1);

  device.complete_events();
  allocator.release();  // polls first: the block is cached by now, and released
  EXPECT_EQ(device.free_calls(), 2);
  EXPECT_EQ(device.live_blocks(), 0);
  EXPECT_EQ(device.held_events(), 0);
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.pending_blocks, 0);
  EXPECT_EQ(stats.device_frees, 2);
}

TEST(CachingAllocatorStreams, DestructionLeavesPendingBlocksToTheDeviceAndReturnsTheirEvents) {
  FakeDeviceMemory device;
  {
    CachingAllocator allocator(device);
    void* used = allocator.allocate(1000, nullptr, fake_stream(1));
    allocator.record_use(used, fake_stream(2));
    allocator.free(used);
  }
  EXPECT_EQ(device.live_blocks(), 1);  // may still be written by stream 2: not freed
  EXPECT_EQ(device.held_events(), 0);
}

TEST(CachingAllocatorStreams, RecordUseOfAPointerNotLiveIsALogicError) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  int local = 0;
  EXPECT_THROW(allocator.record_use(&local, fake_stream(1)), std::logic_error);
  void* block = allocator.allocate(8);
  allocator.free(block);
  EXPECT_THROW(allocator.record_use(block, fake_stream(1)), std::logic_error);  // after its free
}

// A device whose event recording fails on request, like cudaEventRecord on a failed context.
class FailingEventsDevice final : public DeviceMemory {
 public:
  [[nodiscard]] void* allocate(std::int64_t bytes) override { return fake.allocate(bytes); }
  void free(void* pointer) override { fake.free(pointer); }
  [[nodiscard]] DeviceUsage usage() const override { return fake.usage(); }
  [[nodiscard]] EventToken record_event(StreamHandle stream) override {
    if (records_left-- == 0) throw RunError("cudaEventRecord failed");
    return fake.record_event(stream);
  }
  [[nodiscard]] bool event_done(EventToken event) override { return fake.event_done(event); }
  void release_event(EventToken event) override { fake.release_event(event); }

  FakeDeviceMemory fake;
  int records_left = 0;
};

TEST(CachingAllocatorStreams, AFailedEventRecordLeavesTheBlockLive) {
  FailingEventsDevice device;
  device.records_left = 1;  // the second of two events fails
  CachingAllocator allocator(device);
  MemoryAccount account;
  void* block = allocator.allocate(100, &account, fake_stream(1));
  allocator.record_use(block, fake_stream(2));
  allocator.record_use(block, fake_stream(3));
  EXPECT_THROW(allocator.free(block), RunError);
  EXPECT_EQ(device.fake.held_events(), 0);  // the first event was given back
  EXPECT_EQ(account.bytes(), 100);
  EXPECT_EQ(allocator.stats().live_allocations, 1);
  EXPECT_EQ(allocator.stats().pending_blocks, 0);

  device.records_left = 2;  // the device recovered: the free goes through
  allocator.free(block);
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_EQ(allocator.stats().pending_blocks, 1);
  device.fake.complete_events();
  EXPECT_EQ(allocator.allocate(100, nullptr, fake_stream(1)), block);
  allocator.free(block);
}

TEST(CachingAllocatorStreams, ThreadsRecordingUsesKeepExactTotalsAndNeverGetABlockInUse) {
  FakeDeviceMemory device;
  CachingAllocator allocator(device);
  MemoryAccount account;
  constexpr int kThreads = 4;
  constexpr int kRounds = 1500;
  const std::int64_t sizes[] = {100, 1000, 5000};
  // What the test knows, under its own lock: freed blocks whose events are not yet done,
  // and the pool every freed block went back to.
  std::mutex mutex;
  std::unordered_set<void*> in_use_elsewhere;
  std::unordered_map<void*, StreamHandle> pool_of;
  std::vector<int> wrong_block(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const StreamHandle own = fake_stream(t);
      for (int i = 0; i < kRounds; ++i) {
        void* first = allocator.allocate(sizes[(i + t) % 3], &account, own);
        void* second = allocator.allocate(sizes[(i * 7 + t) % 3], &account, own);
        {
          std::scoped_lock lock(mutex);
          for (void* block : {first, second}) {
            if (in_use_elsewhere.contains(block)) ++wrong_block[t];
            if (const auto it = pool_of.find(block); it != pool_of.end() && it->second != own) ++wrong_block[t];
          }
        }
        allocator.record_use(first, fake_stream((t + 1) % kThreads));
        allocator.record_use(first, own);
        if (i % 3 == 0) allocator.record_use(second, fake_stream(kThreads));
        {
          // Freed and noted together, so complete_events (under the same lock) cannot come between.
          std::scoped_lock lock(mutex);
          allocator.free(first);
          allocator.free(second);
          in_use_elsewhere.insert(first);
          if (i % 3 == 0) in_use_elsewhere.insert(second);
          pool_of[first] = own;
          pool_of[second] = own;
        }
        if (t == 0 && i % 16 == 0) {
          std::scoped_lock lock(mutex);
          device.complete_events();
          in_use_elsewhere.clear();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong_block[t], 0) << "thread " << t;
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocations, 2 * kThreads * kRounds);
  EXPECT_EQ(stats.frees, 2 * kThreads * kRounds);
  EXPECT_EQ(stats.cache_hits + stats.device_allocations, stats.allocations);
  EXPECT_EQ(stats.requested_bytes, 0);
  EXPECT_EQ(stats.allocated_bytes, 0);
  EXPECT_EQ(stats.live_allocations, 0);
  EXPECT_EQ(account.bytes(), 0);
  EXPECT_LE(account.peak(), kThreads * 2 * 5000);  // each thread holds at most two blocks
  EXPECT_EQ(device.live_blocks(), stats.device_allocations);
  // Each pending block waits for exactly one stream, and a done event is given back only
  // with its block: the events held are the pending blocks.
  EXPECT_EQ(device.held_events(), stats.pending_blocks);
  EXPECT_EQ(stats.reserved_bytes, device.usage().used_bytes);  // the device got rounded sizes

  device.complete_events();
  allocator.release();
  stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 0);
  EXPECT_EQ(stats.reserved_bytes, 0);
  EXPECT_EQ(stats.device_frees, stats.device_allocations);
  EXPECT_EQ(device.live_blocks(), 0);
  EXPECT_EQ(device.held_events(), 0);
}

TEST(DeviceTensorStreams, AllocatesFromThePoolOfItsStream) {
  FakeDeviceMemory device;  // no data is copied, so the fake device is enough
  CachingAllocator allocator(device);
  MemoryAccount account;
  void* first = nullptr;
  {
    DeviceTensor tensor(allocator, {4, 8}, DeviceType::f32, &account, fake_stream(1));
    EXPECT_EQ(account.bytes(), 128);
    first = tensor.raw();
  }
  EXPECT_EQ(account.bytes(), 0);
  DeviceTensor elsewhere(allocator, {4, 8}, DeviceType::f32, nullptr, fake_stream(2));
  DeviceTensor on_default(allocator, {4, 8}, DeviceType::f32);
  DeviceTensor same_pool(allocator, {32}, DeviceType::i32, nullptr, fake_stream(1));
  EXPECT_NE(elsewhere.raw(), first);
  EXPECT_NE(on_default.raw(), first);
  EXPECT_EQ(same_pool.raw(), first);
  EXPECT_EQ(allocator.stats().device_allocations, 3);
}

}  // namespace
}  // namespace gpipe::exec::cuda
