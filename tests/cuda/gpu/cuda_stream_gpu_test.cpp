// gpipe-run infer on the CUDA backend (exec/cuda/inference/cuda_serving.hpp),
// against the CPU's stream of the same request: every item's output within
// the layers' fp32 tolerance, the same bytes held at each rank's peak (one
// item in flight, so that the order of events is fixed), and items complete
// in order. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "exec/cuda/base/device.hpp"
#include "exec/cuda/inference/cuda_serving.hpp"
#include "exec/inference/cpu_serving.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec::cuda {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device"

inference::ServingRequest cuda_stream_request(const models::Model& model, std::vector<int> partition, int in_flight) {
  inference::ServingRequest rq;
  rq.model = &model;
  rq.layers_per_stage = std::move(partition);
  rq.micro_batch_size = 2;
  rq.workload = {.requests = 6, .in_flight = in_flight};
  rq.seed = 3;
  rq.keep_outputs = true;
  return rq;
}

class CudaStream : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaStream, ServesTheCpusOutputsAndPeaks) {
  SKIP_WITHOUT_GPU();
  const models::Model model = models::parse_model(GetParam());
  const std::vector<int> partition{1, static_cast<int>(model.layers.size()) - 2, 1};
  for (const int in_flight : {1, 3}) {
    const inference::ServingRequest rq = cuda_stream_request(model, partition, in_flight);
    const inference::ServingResult gpu = run_cuda_serving(rq, {});
    const inference::ServingResult cpu = inference::run_cpu_serving(rq);
    ASSERT_EQ(gpu.outputs.size(), cpu.outputs.size());
    double worst = 0;
    for (std::size_t r = 0; r < cpu.outputs.size(); ++r) {
      const auto g = gpu.outputs[r].f32();
      const auto c = cpu.outputs[r].f32();
      ASSERT_EQ(g.size(), c.size());
      for (std::size_t i = 0; i < c.size(); ++i) {
        worst = std::max(worst, std::abs(double(g[i]) - double(c[i])) / std::max(1e-6, std::abs(double(c[i]))));
      }
    }
    std::printf("%s B=%d: worst relative output error against the CPU %.2e\n", GetParam(), in_flight, worst);
    EXPECT_LE(worst, 1e-4);
    EXPECT_EQ(gpu.run.timeline.info.source, "cuda");
    EXPECT_EQ(gpu.static_bytes, cpu.static_bytes);
    if (in_flight == 1) {
      EXPECT_EQ(gpu.run.peak_bytes, cpu.run.peak_bytes);
    }
    for (std::size_t r = 1; r < gpu.run.items.size(); ++r) {
      EXPECT_GT(gpu.run.items[r].completed_ns, gpu.run.items[r - 1].completed_ns) << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaStream,
                         ::testing::Values("llama:layers=2,hidden=32,heads=4,kv_heads=2,ffn=48,seq=16,vocab=64",
                                           "dit:layers=2,hidden=32,heads=4,tokens=16,patch=1,channels=2,classes=3"));

}  // namespace
}  // namespace gpipe::exec::cuda
