// The real CUPTI tracer on a GPU: work launched under an external id comes
// back as that action's GPU interval. Skips without a device.
#include <gtest/gtest.h>

#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/error.hpp"
#include "exec/cuda/base/check.hpp"
#include "exec/cuda/base/device.hpp"
#include "exec/cuda/cupti/cupti_activity_source.hpp"
#include "exec/cuda/cupti/gpu_timeline.hpp"
#include "exec/cuda/cupti/kernel_events.hpp"

namespace gpipe::exec::cuda::cupti {
namespace {

using schedules::ActionKind;
using schedules::make_action;
using schedules::Rank;

TEST(CuptiGpu, ActionsGetTheirKernelsAndCopies) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr int kN = 1 << 16;
  float* a = nullptr;
  float* b = nullptr;
  GPIPE_CUDA_CHECK(cudaMalloc(&a, kN * sizeof(float)));
  GPIPE_CUDA_CHECK(cudaMalloc(&b, kN * sizeof(float)));
  cudaStream_t stream = nullptr;
  GPIPE_CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t blas = nullptr;
  GPIPE_CUBLAS_CHECK(cublasCreate(&blas));
  GPIPE_CUBLAS_CHECK(cublasSetStream(blas, stream));
  const std::vector<float> host(kN, 1.0f);
  const float two = 2.0f;

  const std::int64_t origin = cupti_timestamp_ns();
  CuptiActivitySource source;
  source.start();
  EXPECT_THROW(CuptiActivitySource().start(), RunError);  // one tracer at a time
  {
    ExternalIdScope scope(source, 1);  // "0F0": a copy in and a kernel
    GPIPE_CUDA_CHECK(cudaMemcpyAsync(a, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream));
    GPIPE_CUBLAS_CHECK(cublasSscal(blas, kN, &two, a, 1));
  }
  {
    ExternalIdScope scope(source, 2);  // "0SEND_F0": a device copy
    GPIPE_CUDA_CHECK(cudaMemcpyAsync(b, a, kN * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }
  const ActivityRecords records = source.stop();

  std::vector<float> back(kN);
  GPIPE_CUDA_CHECK(cudaMemcpy(back.data(), b, kN * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back[0], 2.0f);
  GPIPE_CUBLAS_CHECK(cublasDestroy(blas));
  GPIPE_CUDA_CHECK(cudaStreamDestroy(stream));
  GPIPE_CUDA_CHECK(cudaFree(a));
  GPIPE_CUDA_CHECK(cudaFree(b));

  EXPECT_GE(records.kernels.size(), 1u);
  EXPECT_GE(records.memcpys.size(), 2u);
  EXPECT_GE(records.runtime.size(), 3u);
  EXPECT_GE(records.external.size(), 3u);
  EXPECT_EQ(records.dropped, 0u);
  const ExternalIdMap actions = {{1, ActionRef{Rank{0}, make_action(0, ActionKind::F, 0)}},
                                 {2, ActionRef{Rank{0}, make_action(0, ActionKind::SEND_F, 0)}}};
  const GpuTimeline t = build_gpu_timeline(records, actions, origin);
  ASSERT_EQ(t.actions.size(), 2u) << "unmatched " << t.unmatched_records;
  EXPECT_TRUE(t.actions_without_gpu_work.empty());
  for (const auto& a : t.actions) {
    EXPECT_LT(a.start_ns, a.end_ns);
    EXPECT_GT(a.start_ns, 0);  // after the origin, on the same clock
  }
  // One stream, in order: the scaled copy starts after the kernel ends.
  EXPECT_LE(t.actions[0].end_ns, t.actions[1].start_ns);
  bool named = false;
  for (const auto& r : records.runtime) named = named || !r.name.empty();
  EXPECT_TRUE(named);
  const auto events = gpu_trace_events(records, actions);
  EXPECT_EQ(events.at(0)["cat"], "kernel");
  std::cout << "kernels " << records.kernels.size() << " (first: " << records.kernels[0].name
            << "), memcpys " << records.memcpys.size() << ", runtime " << records.runtime.size()
            << ", 0F0 " << t.actions[0].duration_ns() << " ns, 0SEND_F0 "
            << t.actions[1].duration_ns() << " ns\n";
}

}  // namespace
}  // namespace gpipe::exec::cuda::cupti
