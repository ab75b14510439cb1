// A layer's kernels: their FLOPs sum exactly to the layer's in each pass (so
// the kernel model prices the same work the FLOP counts hold), for every
// decomposed kind, split or not, naive or flash; the GEMM shapes are
// Megatron-LM's split; kinds without a decomposition carry one roofline
// kernel a pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/layer_kernels.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"

namespace gpipe::models {
namespace {

const Kernel& named(const std::vector<Kernel>& kernels, const std::string& name) {
  const auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.name == name; });
  if (it == kernels.end()) throw std::runtime_error("no kernel " + name);
  return *it;
}

void expect_flops_match(const Model& model, int b) {
  for (const Layer& layer : model.layers) {
    const std::vector<Kernel> kernels = layer_kernels(model, layer, b, DType::bf16);
    const double scale = b;
    EXPECT_NEAR(kernel_flops(kernels, KernelPass::forward), scale * layer.fwd_flops, 1e-9 * scale * layer.fwd_flops)
        << model.spec << " " << layer.name;
    EXPECT_NEAR(kernel_flops(kernels, KernelPass::input), scale * layer.bwd_input_flops,
                1e-9 * scale * layer.bwd_input_flops)
        << model.spec << " " << layer.name;
    EXPECT_NEAR(kernel_flops(kernels, KernelPass::weight), scale * layer.bwd_weight_flops,
                1e-9 * scale * layer.bwd_weight_flops)
        << model.spec << " " << layer.name;
  }
}

TEST(LayerKernels, FlopsEqualTheLayersForEveryFamilyAndSplit) {
  for (const char* spec : {"transformer:layers=2,hidden=64,heads=4,seq=32,vocab=100",
                           "transformer:layers=2,hidden=64,heads=4,seq=32,vocab=100,attn=flash",
                           "llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=32,vocab=101",
                           "llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=32,vocab=101,attn=naive",
                           "mlp:layers=3,hidden=16", "unbalanced:layers=4,hidden=8",
                           "dit:layers=2,hidden=64,heads=4,tokens=16"}) {
    const Model model = parse_model(spec);
    expect_flops_match(model, 1);
    expect_flops_match(model, 3);
    if (model.family == "transformer" || model.family == "llama") {
      expect_flops_match(split_tensor_parallel(model, {.degree = 2}), 3);
      expect_flops_match(split_tensor_parallel(model, {.degree = 2, .sequence_parallel = true}), 3);
    }
  }
}

// GPT-2 block at H 64, A 4, S 32, b 2, T 2: qkv is (t = 64) x (3H/T = 96) x 64;
// proj 64 x 64 x 32; the naive scores b A/T = 4 heads of 32 x 32 x 16.
TEST(LayerKernels, MegatronShapesUnderTensorParallelism) {
  const Model model =
      split_tensor_parallel(parse_model("transformer:layers=1,hidden=64,heads=4,seq=32,vocab=100"), {.degree = 2});
  const std::vector<Kernel> k = layer_kernels(model, model.layers[1], 2, DType::bf16);
  const Kernel& qkv = named(k, "qkv");
  EXPECT_EQ(qkv.kind, KernelKind::gemm);
  EXPECT_EQ(std::vector<std::int64_t>({qkv.m, qkv.n, qkv.k, qkv.batch}), std::vector<std::int64_t>({64, 96, 64, 1}));
  const Kernel& proj = named(k, "proj");
  EXPECT_EQ(std::vector<std::int64_t>({proj.m, proj.n, proj.k}), std::vector<std::int64_t>({64, 64, 32}));
  const Kernel& scores = named(k, "scores");
  EXPECT_EQ(std::vector<std::int64_t>({scores.m, scores.n, scores.k, scores.batch}),
            std::vector<std::int64_t>({32, 32, 16, 4}));
  // The softmax reads and writes the 4 x 32 x 32 scores, 2 bytes each.
  EXPECT_DOUBLE_EQ(named(k, "softmax").bytes, 2.0 * 4 * 32 * 32 * 2);
  // The weight gradient's GEMMs reduce over the tokens.
  const Kernel& qkv_w = named(k, "qkv.w");
  EXPECT_EQ(std::vector<std::int64_t>({qkv_w.m, qkv_w.n, qkv_w.k}), std::vector<std::int64_t>({96, 64, 64}));
  EXPECT_EQ(qkv_w.pass, KernelPass::weight);
}

// llama fuses the SwiGLU's gate and up projections into one GEMM of 2F, and
// its attention is flash: one kernel a pass.
TEST(LayerKernels, LlamaFusesGateAndUpAndRunsOneAttentionKernel) {
  const Model model = parse_model("llama:layers=1,hidden=64,heads=4,kv_heads=2,ffn=96,seq=32,vocab=101");
  const std::vector<Kernel> k = layer_kernels(model, model.layers[1], 1, DType::bf16);
  EXPECT_EQ(named(k, "gate_up").n, 192);
  EXPECT_EQ(named(k, "qkv").n, (4 + 2 * 2) * 16);
  const auto attention = std::count_if(k.begin(), k.end(), [](const Kernel& x) { return x.kind == KernelKind::attention; });
  EXPECT_EQ(attention, 2);
}

TEST(LayerKernels, KindsWithoutADecompositionAreOneRooflineKernelAPass) {
  const Model model = parse_model("dit:layers=1,hidden=64,heads=4,tokens=16");
  for (const Layer& layer : model.layers) {
    for (const Kernel& k : layer_kernels(model, layer, 2, DType::bf16)) EXPECT_EQ(k.kind, KernelKind::roofline);
  }
}

TEST(LayerKernels, RefusesAMicroBatchBelowOne) {
  const Model model = parse_model("mlp:layers=1,hidden=4");
  EXPECT_THROW((void)layer_kernels(model, model.layers[0], 0, DType::bf16), InputError);
}

}  // namespace
}  // namespace gpipe::models
