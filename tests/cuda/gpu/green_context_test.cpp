// SM partitions on a real GPU: K = 4 stages, each with its own stream (in a
// green context where the driver has them, else plain streams with a reason),
// and a memset on each stream ordered into one buffer per stage. Skips
// without a device.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "exec/cuda/base/caching_allocator.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/base/device_memory.hpp"
#include "exec/cuda/base/device_tensor.hpp"
#include "exec/cuda/base/green_context.hpp"
#include "exec/cuda/base/stream.hpp"

namespace gpipe::exec::cuda {
namespace {

TEST(GreenContextGpu, FourPartitionsEachRunWork) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr int kStages = 4;
  SmPartitions partitions = SmPartitions::create(0, kStages);
  ASSERT_EQ(partitions.size(), kStages);
  // Hopper and later have green contexts (CUDA 12.4+): a fallback to plain
  // streams there is a defect, not a skip.
  if (compute_capability_major(0) >= 9) {
    ASSERT_TRUE(partitions.green()) << partitions.why();
    EXPECT_TRUE(partitions.note().empty()) << partitions.note();
  }
  if (partitions.green()) {
    EXPECT_TRUE(partitions.why().empty());
    EXPECT_GE(partitions.split().sms_per_stage, 8);
    EXPECT_LE(partitions.split().sms_per_stage * kStages, partitions.total_sms());
    std::printf("green contexts: %s\n", describe(partitions.split(), partitions.total_sms()).c_str());
  } else {
    EXPECT_FALSE(partitions.why().empty());
    std::printf("%s\n", partitions.why().c_str());
  }

  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  std::vector<DeviceTensor> buffers;
  for (int stage = 0; stage < kStages; ++stage) {
    buffers.emplace_back(allocator, std::vector<std::int64_t>{1 << 16}, DeviceType::i32);
    // Bytes 0x01..0x04: each stage writes its own pattern on its own stream.
    GPIPE_CUDA_CHECK(cudaMemsetAsync(buffers.back().raw(), stage + 1, static_cast<std::size_t>(buffers.back().bytes()),
                                     partitions.stream(stage).get()));
  }
  for (int stage = 0; stage < kStages; ++stage) {
    const Tensor back = buffers[static_cast<std::size_t>(stage)].to_host(partitions.stream(stage));
    const auto byte = static_cast<std::int32_t>(stage + 1);
    const std::int32_t expected = byte | (byte << 8) | (byte << 16) | (byte << 24);
    EXPECT_EQ(back.i32()[0], expected) << "stage " << stage;
    EXPECT_EQ(back.i32()[back.numel() - 1], expected) << "stage " << stage;
  }
}

TEST(GreenContextGpu, EventsOrderOneStageAfterAnother) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  SmPartitions partitions = SmPartitions::create(0, 2);
  CudaDeviceMemory device(0);
  CachingAllocator allocator(device);
  DeviceTensor buffer(allocator, {1 << 20}, DeviceType::i32);
  GPIPE_CUDA_CHECK(cudaMemsetAsync(buffer.raw(), 7, static_cast<std::size_t>(buffer.bytes()),
                                   partitions.stream(0).get()));
  {
    // An event is recorded on a stream of its own context: made while bound to stage 0's.
    const SmPartitions::ThreadBinding binding(partitions, 0);
    Event written(false);
    written.record(partitions.stream(0));
    partitions.stream(1).wait(written);
  }
  const Tensor back = buffer.to_host(partitions.stream(1));  // ordered after stage 0's memset
  EXPECT_EQ(back.i32()[back.numel() - 1], 0x07070707);
}

TEST(GreenContextGpu, SmPerStageIsRoundedAsTheDriverRequires) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  SmPartitions partitions = SmPartitions::create(0, 2, 10);
  ASSERT_EQ(partitions.size(), 2);
  if (!partitions.green()) GTEST_SKIP() << partitions.why();
  // Hopper: 10 rounds up to 16 (multiples of 8); the driver reports what it made.
  EXPECT_GE(partitions.split().sms_per_stage, 10);
  EXPECT_EQ(partitions.split().requested_sms, 10);
  EXPECT_EQ(partitions.split().unused_sms, partitions.total_sms() - 2 * partitions.split().sms_per_stage);
  std::printf("%s\n", describe(partitions.split(), partitions.total_sms()).c_str());
}

TEST(GreenContextGpu, ASplitThatDoesNotFitIsAnInputError) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  // 100 stages never fit on a GPU of fewer than 800 SMs: an InputError with green contexts; without them any K is plain streams.
  try {
    SmPartitions partitions = SmPartitions::create(0, 100);
    EXPECT_FALSE(partitions.green());
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--stages 100"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace gpipe::exec::cuda
