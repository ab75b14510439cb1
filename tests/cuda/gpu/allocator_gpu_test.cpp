// The caching allocator and DeviceTensor on a real GPU: cudaMalloc'd blocks
// reused and released, the device's own usage seen to grow, and host <->
// device round trips of every element type (exact for f32 and i32; bf16 equal
// to the host's own rounding). Skips without a device.
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cuda/caching_allocator.hpp"
#include "exec/cuda/device.hpp"
#include "exec/cuda/device_memory.hpp"
#include "exec/cuda/device_tensor.hpp"
#include "exec/cuda/stream.hpp"
#include "exec/memory_account.hpp"
#include "exec/tensor.hpp"

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
