// The CUDA profiler on a GPU: tiny mlp and transformer models at sizes 1 and
// 2 give a CUPTI profile of the device with every forward and backward
// timed, the stash bytes models::bytes_at() predicts, and a measured link;
// the profile survives its JSON form. Prints the figures. Skips without a device.
#include <gtest/gtest.h>

#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/cuda/base/device.hpp"
#include "exec/cuda/profiler/layer_profiler.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec::cuda::profiler {
namespace {

class LayerProfilerGpuTest : public ::testing::TestWithParam<const char*> {};

TEST_P(LayerProfilerGpuTest, ProfilesEveryLayerOnTheDevice) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const models::Model model = models::parse_model(GetParam());
  CudaProfilerOptions options;
  options.warmup = 1;
  options.repeats = 3;
  options.link.repeats = 5;
  bool partitions_reported = false;
  options.on_partitions = [&](const SmPartitions& p) {
    partitions_reported = true;
    EXPECT_EQ(p.size(), 1);
    std::cout << (p.green() ? describe(p.split(), p.total_sms()) : p.why()) << "\n";
  };
  const std::vector<int> sizes{2, 1};
  const profiles::Profile profile = profile_cuda(model, sizes, options);

  EXPECT_TRUE(partitions_reported);
  EXPECT_EQ(profile.source, "cupti");
  EXPECT_EQ(profile.dtype, "fp32");
  EXPECT_EQ(profile.model, model.spec);
  EXPECT_EQ(profile.device, device_name(0));
  EXPECT_FALSE(profile.device.empty());
  EXPECT_GT(profile.link.latency_us, 0.0);
  EXPECT_GT(profile.link.bandwidth_GBps, 0.0);
  ASSERT_EQ(profile.layers.size(), model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const profiles::LayerProfile& layer = profile.layers[i];
    EXPECT_EQ(layer.name, model.layers[i].name);
    EXPECT_EQ(layer.param_bytes, models::param_bytes(model.layers[i], models::DType::fp32)) << layer.name;
    EXPECT_EQ(layer.optimizer_us > 0, layer.param_bytes > 0) << layer.name;
    ASSERT_EQ(layer.samples.size(), 2U);
    for (const profiles::ProfileSample& s : layer.samples) {
      const models::LayerBytes bytes = models::bytes_at(model.layers[i], s.micro_batch_size, models::DType::fp32);
      EXPECT_GT(s.fwd_us, 0.0) << layer.name << " b=" << s.micro_batch_size;
      EXPECT_GT(s.bwd_us, 0.0) << layer.name << " b=" << s.micro_batch_size;
      EXPECT_EQ(s.activation_bytes, bytes.activation_bytes) << layer.name;
      EXPECT_EQ(s.input_bytes, bytes.input_bytes) << layer.name;
      EXPECT_EQ(s.output_bytes, bytes.output_bytes) << layer.name;
      std::cout << layer.name << " b=" << s.micro_batch_size << " fwd " << s.fwd_us << " us, bwd " << s.bwd_us
                << " us\n";
    }
  }
  EXPECT_EQ(profiles::profile_from_json(profiles::to_json(profile), "gpu test"), profile);
  std::cout << profile.device << ": link " << profile.link.latency_us << " us, " << profile.link.bandwidth_GBps
            << " GB/s\n";
}

INSTANTIATE_TEST_SUITE_P(Models, LayerProfilerGpuTest,
                         ::testing::Values("mlp:layers=2,hidden=16",
                                           "transformer:layers=2,hidden=16,heads=2,seq=8,vocab=32"));

TEST(LayerProfilerGpu, TwoStagesMeasureInHalfTheDevice) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const models::Model model = models::parse_model("mlp:layers=1,hidden=8");
  CudaProfilerOptions options;
  options.warmup = 0;
  options.repeats = 1;
  options.stages = 2;
  options.link.repeats = 3;
  int partitions = 0;
  options.on_partitions = [&](const SmPartitions& p) { partitions = p.size(); };
  const profiles::Profile profile = profile_cuda(model, std::vector<int>{1}, options);
  EXPECT_EQ(partitions, 2);
  EXPECT_GT(profile.layers.front().samples.front().fwd_us, 0.0);
}

}  // namespace
}  // namespace gpipe::exec::cuda::profiler
