// The caching allocator and DeviceTensor on a real GPU: cudaMalloc'd blocks
// reused and released, the device's own usage seen to grow, and host <->
// device round trips of every element type (exact for f32 and i32; bf16 equal
// to the host's own rounding), and a block used on a second stream kept from
// reuse until that stream's work is done. Skips without a device.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/stream.hpp"
#include "exec/layers/memory_account.hpp"
#include "exec/runtime/tensor.hpp"

namespace gpipe::exec::cuda {
namespace {

Tensor ramp_f32(std::vector<std::int64_t> shape) {
  Tensor host(std::move(shape));
  std::span<float> values = host.f32();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.37F * static_cast<float>(i) - 11.0F;
  return host;
}

TEST(CachingAllocatorGpu, RealBlocksAreReusedAndReleased) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  const std::int64_t before = allocator.device_used_bytes();
  constexpr std::int64_t kBytes = 64 << 20;
  void* block = allocator.allocate(kBytes);
  ASSERT_NE(block, nullptr);
  // The driver may round to its own page size; at least our 64 MiB must show.
  EXPECT_GE(allocator.device_used_bytes() - before, kBytes);
  allocator.free(block);
  EXPECT_EQ(allocator.allocate(kBytes - 100), block);
  allocator.free(block);
  EXPECT_EQ(allocator.stats().device_allocations, 1);
  allocator.release();
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_GE(allocator.device_peak_used_bytes(), before + kBytes);
  std::printf("device used: %lld bytes before, peak %lld\n", static_cast<long long>(before),
              static_cast<long long>(allocator.device_peak_used_bytes()));
}

// Holds a stream at a host function until opened: the work queued behind it waits,
// deterministically, with no kernel timing involved. Opened on every way out of a
// test (and the stream drained), so no stream stays blocked after a failure.
class Gate {
 public:
  explicit Gate(const Stream& stream) : stream_(stream) {
    if (cudaLaunchHostFunc(stream.get(), wait_until_open, &open_) != cudaSuccess) {
      throw std::runtime_error("cudaLaunchHostFunc failed");
    }
  }
  ~Gate() {
    open();
    (void)cudaStreamSynchronize(stream_.get());
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open() { open_ = true; }

 private:
  static void CUDART_CB wait_until_open(void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  }
  const Stream& stream_;
  std::atomic<bool> open_{false};
};

TEST(CachingAllocatorGpu, ABlockUsedOnAnotherStreamIsNotReusedBeforeItsWorkIsDone) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  Stream compute(0);
  Stream side(0);
  constexpr std::int64_t kBytes = 1 << 20;

  DeviceTensor tensor(allocator, {kBytes / 4}, DeviceType::f32, nullptr, compute.get());
  void* const block = tensor.raw();
  tensor.zero(compute);
  Event written(false);
  written.record(compute);
  side.wait(written);
  Gate gate(side);
  ASSERT_EQ(cudaMemsetAsync(block, 1, kBytes, side.get()), cudaSuccess);  // queued behind the gate
  tensor.record_use(side);
  tensor = DeviceTensor();  // freed while the side stream cannot have run
  EXPECT_EQ(allocator.stats().pending_blocks, 1);

  void* meanwhile = allocator.allocate(kBytes, nullptr, compute.get());
  EXPECT_NE(meanwhile, block);
  allocator.free(meanwhile);

  gate.open();
  side.synchronize();
  void* first = allocator.allocate(kBytes, nullptr, compute.get());
  void* second = allocator.allocate(kBytes, nullptr, compute.get());
  // Both blocks are back in the compute pool; which comes first is the cache's business.
  EXPECT_TRUE((first == block && second == meanwhile) || (first == meanwhile && second == block));
  const AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 0);
  EXPECT_EQ(stats.device_allocations, 2);
  EXPECT_EQ(stats.cache_hits, 2);
  allocator.free(first);
  allocator.free(second);
  compute.synchronize();
}

TEST(CudaDeviceMemoryGpu, EventsAreDoneOnlyAfterTheirStreamsWork) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  Stream stream(0);
  Gate gate(stream);
  const EventToken blocked = device.record_event(stream.get());
  EXPECT_FALSE(device.event_done(blocked));
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(device.event_done(blocked));
  device.release_event(blocked);
  const EventToken again = device.record_event(stream.get());  // the pooled event, recorded anew
  EXPECT_NE(again, blocked);
  stream.synchronize();
  EXPECT_TRUE(device.event_done(again));
  device.release_event(again);
  EXPECT_THROW((void)device.event_done(again), std::logic_error);
}

TEST(DeviceTensorGpu, F32RoundTripIsExact) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  Stream stream(0);
  MemoryAccount account;
  const Tensor host = ramp_f32({7, 33});
  const DeviceTensor on_device = DeviceTensor::from_host(allocator, host, DeviceType::f32, stream, &account);
  EXPECT_EQ(account.bytes(), 7 * 33 * 4);
  const Tensor back = on_device.to_host(stream);
  ASSERT_EQ(back.shape(), host.shape());
  for (std::int64_t i = 0; i < host.numel(); ++i) EXPECT_EQ(back.f32()[i], host.f32()[i]) << i;
}

TEST(DeviceTensorGpu, I32RoundTripIsExact) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  Stream stream(0);
  Tensor host({5, 9}, ElementType::i32);
  for (std::int64_t i = 0; i < host.numel(); ++i) host.i32()[i] = static_cast<std::int32_t>(i * 1'000'003 - 7);
  const DeviceTensor on_device = DeviceTensor::from_host(allocator, host, DeviceType::i32, stream);
  const Tensor back = on_device.to_host(stream);
  ASSERT_EQ(back.type(), ElementType::i32);
  for (std::int64_t i = 0; i < host.numel(); ++i) EXPECT_EQ(back.i32()[i], host.i32()[i]) << i;
}

TEST(DeviceTensorGpu, Bf16RoundTripEqualsHostRounding) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  Stream stream(0);
  MemoryAccount account;
  const Tensor host = ramp_f32({4, 50});
  const DeviceTensor on_device = DeviceTensor::from_host(allocator, host, DeviceType::bf16, stream, &account);
  EXPECT_EQ(account.bytes(), 4 * 50 * 2);
  const Tensor back = on_device.to_host(stream);
  ASSERT_EQ(back.type(), ElementType::f32);
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    EXPECT_EQ(back.f32()[i], bf16_bits_to_f32(f32_to_bf16_bits(host.f32()[i]))) << i;
  }
}

TEST(DeviceTensorGpu, ZeroAndEventTiming) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  Stream stream(0);
  DeviceTensor tensor = DeviceTensor::from_host(allocator, ramp_f32({1024}), DeviceType::f32, stream);
  Event start;
  Event end;
  start.record(stream);
  tensor.zero(stream);
  end.record(stream);
  end.synchronize();
  EXPECT_TRUE(end.done());
  EXPECT_GE(elapsed_ns(start, end), 0);
  const Tensor back = tensor.to_host(stream);
  for (float value : back.f32()) ASSERT_EQ(value, 0.0F);
}

}  // namespace
}  // namespace gpipe::exec::cuda
