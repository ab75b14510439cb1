// How both profilers put a profile together (exec/profiling/profile_assembly.hpp):
// the header fields, and each layer's entry from the layer as the executor
// built it, its samples in the sizes' order. With the CPU's layers; the CUDA
// profiler's are the same template over device tensors.
#include "exec/profiling/profile_assembly.hpp"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cpu/layers/layer.hpp"
#include "models/model_spec.hpp"

namespace gpipe::exec {
namespace {

// What a profiler measured at one size, as the two profilers keep it.
struct MeasuredAt {
  std::vector<profiles::ProfileSample> samples;  // per layer
};

TEST(ProfileAssembly, HeaderSaysWhatWasMeasured) {
  const models::Model model = models::parse_model("mlp:layers=2,hidden=8");
  const profiles::Profile p = profile_header(model, "a machine", "cpu");
  EXPECT_EQ(p.device, "a machine");
  EXPECT_EQ(p.source, "cpu");
  EXPECT_EQ(p.dtype, "fp32");
  EXPECT_EQ(p.model, model.spec);
  EXPECT_EQ(p.workload, "training");
  EXPECT_TRUE(p.layers.empty());
}

TEST(ProfileAssembly, EachLayerFromItsLayerAndItsSamplesPerSize) {
  const models::Model model =
      models::parse_model("llama:layers=1,hidden=16,heads=2,kv_heads=1,ffn=24,seq=4,vocab=32,tied=1");
  std::vector<std::unique_ptr<cpu::Layer>> layers;
  for (int i = 0; i < static_cast<int>(model.layers.size()); ++i) layers.push_back(cpu::make_layer(model, i, 1));
  std::vector<MeasuredAt> sizes(2);
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    for (std::size_t l = 0; l < layers.size(); ++l) {
      profiles::ProfileSample& sample = sizes[s].samples.emplace_back();
      sample.micro_batch_size = static_cast<int>(s) + 1;
      sample.input_bytes = static_cast<std::int64_t>(100 * l + s);
    }
  }
  const std::vector<profiles::LayerProfile> out = layer_profiles(layers, sizes);
  ASSERT_EQ(out.size(), model.layers.size());
  for (std::size_t l = 0; l < out.size(); ++l) {
    const models::Layer& spec = model.layers[l];
    EXPECT_EQ(out[l].name, spec.name);
    EXPECT_EQ(out[l].kind, spec.kind);
    EXPECT_EQ(out[l].param_bytes, models::param_bytes(spec, models::DType::fp32)) << spec.name;
    EXPECT_EQ(out[l].optimizer_us, 0.0) << "the caller's to measure";
    ASSERT_EQ(out[l].samples.size(), 2U);
    for (std::size_t s = 0; s < 2; ++s) {
      EXPECT_EQ(out[l].samples[s].micro_batch_size, static_cast<int>(s) + 1);
      EXPECT_EQ(out[l].samples[s].input_bytes, static_cast<std::int64_t>(100 * l + s));
    }
  }
  // The tied matrix: the token table of the first layer, the unembedding of
  // the last, one matrix of vocab x hidden held by both, in f32.
  EXPECT_EQ(out.front().tied_bytes, 32 * 16 * 4);
  EXPECT_EQ(out.front().tied_bytes, model.layers.front().tied_elems * 4);
  EXPECT_EQ(out.back().tied_bytes, out.front().tied_bytes);
  for (std::size_t l = 1; l + 1 < out.size(); ++l) EXPECT_EQ(out[l].tied_bytes, 0) << out[l].name;
}

}  // namespace
}  // namespace gpipe::exec
