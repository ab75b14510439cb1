// The analytic cost model: exact roofline numbers for tiny models worked out
// by hand from analytic.hpp's formulas, bytes that are models::bytes_at()'s,
// bwd = input + weight, growth with micro-batch size, the errors, and the
// shipped profiles/data files (they load, and equal what the code computes now,
// so a change to the model without scripts/make-analytic-profiles fails here).
// Times compare with EXPECT_DOUBLE_EQ (4 ulps): the hand values are exact
// decimals that the formula's divisions round.
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "models/model_spec.hpp"
#include "models/layer_kernels.hpp"
#include "profiles/analytic.hpp"
#include "profiles/kernel_model.hpp"
#include "profiles/profile.hpp"

namespace gpipe::profiles {
namespace {

using models::DType;

// 1000 FLOP/s and 1000 bytes/s with mfu = bw_efficiency = 1: a FLOP or a
// byte costs 1000 us, so the hand numbers below read off the counts.
const Device kToy{.key = "toy",
                  .name = "toy",
                  .bf16_tflops = 1e-9,
                  .fp32_tflops = 1e-9,
                  .hbm_TBps = 1e-9,
                  .link_GBps = 7.0,
                  .memory_bytes = 1};
constexpr AnalyticOptions kExact{.mfu = 1.0, .bw_efficiency = 1.0};

template <typename Call>
std::string analytic_error_of(Call call) {
  try {
    (void)call();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

// mlp:layers=1,hidden=4, bf16, b = 2. block0: H 4, F 16, params 2H+(FH+F)+(HF+H)
// = 156 (P = 312 bytes), FLOPs 4HF = 256 per pass per sample, stash 2H+2F+2 = 42
// elements (Act = 2*42*2 = 168), Out = dIn = 2*4*2 = 16.
TEST(AnalyticByHand, MlpBlockRooflineBothBranches) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=4");
  const PassTimes t = analytic_pass_times(model, model.layers[0], kToy, DType::bf16, 2, kExact);
  EXPECT_DOUBLE_EQ(t.fwd_us, 512005.0);         // max(512 FLOPs, 312+168+16 = 496 bytes) + 5
  EXPECT_DOUBLE_EQ(t.bwd_input_us, 512005.0);   // max(512, 312+168+16+16 = 512) + 5
  EXPECT_DOUBLE_EQ(t.bwd_weight_us, 808005.0);  // max(512, 2*312+168+16 = 808) + 5
  EXPECT_DOUBLE_EQ(analytic_optimizer_us(model.layers[0], kToy, kExact), 4992005.0);  // 156*32
}

// loss: no parameters, input 4, target 4, output 1, stash 8 elements. b = 2:
// Act 32, Out 4, dIn 16 bytes; no FLOPs, no weight gradient, no optimizer step.
TEST(AnalyticByHand, MseLossIsMemoryBoundWithNoWeightPass) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=4");
  const models::Layer& loss = model.layers[1];
  const PassTimes t = analytic_pass_times(model, loss, kToy, DType::bf16, 2, kExact);
  EXPECT_DOUBLE_EQ(t.fwd_us, 36005.0);        // 0 + 32 + 4
  EXPECT_DOUBLE_EQ(t.bwd_input_us, 52005.0);  // 0 + 32 + 4 + 16
  EXPECT_EQ(t.bwd_weight_us, 0.0);
  EXPECT_EQ(analytic_optimizer_us(loss, kToy, kExact), 0.0);
}

// transformer:layers=1,hidden=4,heads=1,seq=2,vocab=8, bf16, b = 1.
TEST(AnalyticByHand, TransformerLayers) {
  const models::Model model =
      models::parse_model("transformer:layers=1,hidden=4,heads=1,seq=2,vocab=8");
  ASSERT_EQ(model.layers.size(), 3u);
  // embed: params VH+SH = 40 (P 80), no FLOPs, stash = ids 4S = 8 bytes, Out SH = 16 bytes.
  // Its input is token ids: no input gradient, so no bwd_input pass.
  const PassTimes embed = analytic_pass_times(model, model.layers[0], kToy, DType::bf16, 1, kExact);
  EXPECT_DOUBLE_EQ(embed.fwd_us, 104005.0);  // 80 + 8 + 16
  EXPECT_EQ(embed.bwd_input_us, 0.0);
  EXPECT_DOUBLE_EQ(embed.bwd_weight_us, 184005.0);  // 2*80 + 8 + 16
  // block0: params 12H^2+13H = 244 (P 488); FLOPs fwd 24SH^2+4S^2H = 832, bwd_input
  // 24SH^2+8S^2H = 896, bwd_weight 24SH^2 = 768; stash 16SH+4S+AS^2 = 140 (Act 280);
  // Out = dIn = 16. Bytes: fwd 784, bwd_input 800, bwd_weight 2*488+280+16 = 1272.
  const PassTimes block = analytic_pass_times(model, model.layers[1], kToy, DType::bf16, 1, kExact);
  EXPECT_DOUBLE_EQ(block.fwd_us, 832005.0);
  EXPECT_DOUBLE_EQ(block.bwd_input_us, 896005.0);
  EXPECT_DOUBLE_EQ(block.bwd_weight_us, 1272005.0);
  // head: params 2H+VH = 40 (P 80); FLOPs 2SHV = 128 per pass; stash 2SH+2S+SV = 36
  // elements + 8 bytes of targets (Act 80); Out 2 (the loss); dIn 16.
  const PassTimes head = analytic_pass_times(model, model.layers[2], kToy, DType::bf16, 1, kExact);
  EXPECT_DOUBLE_EQ(head.fwd_us, 162005.0);         // 80 + 80 + 2
  EXPECT_DOUBLE_EQ(head.bwd_input_us, 178005.0);   // 80 + 80 + 2 + 16
  EXPECT_DOUBLE_EQ(head.bwd_weight_us, 242005.0);  // 160 + 80 + 2
}

// --mfu's flat roofline on a real device: bandwidth efficiency 0.8 unless
// given, 5 us per pass.
constexpr AnalyticOptions kHalf{.mfu = 0.5};

TEST(AnalyticByHand, FlatRooflineOnH100) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=4");
  const Device h100 = device_named("h100");
  const PassTimes t = analytic_pass_times(model, model.layers[0], h100, DType::bf16, 1, kHalf);
  // 256 FLOPs take 5e-13 s at 494.5 TFLOP/s; 404 bytes take 1.5e-10 s at 2.68 TB/s.
  EXPECT_DOUBLE_EQ(t.fwd_us, 404.0 / 2.68e12 * 1e6 + 5.0);
  EXPECT_DOUBLE_EQ(analytic_optimizer_us(model.layers[0], h100, kHalf), 156.0 * 32 / 2.68e12 * 1e6 + 5);
  // fp32: 4-byte elements and the 67 TFLOP/s peak. A block big enough to be
  // compute-bound: 4HF = 4*4096*16384 FLOPs per sample, b = 1024.
  const models::Model big = models::parse_model("mlp:layers=1,hidden=4096");
  const PassTimes f = analytic_pass_times(big, big.layers[0], h100, DType::fp32, 1024, kHalf);
  EXPECT_DOUBLE_EQ(f.fwd_us, 1024.0 * 4 * 4096 * 16384 / (67e12 * 0.5) * 1e6 + 5.0);
}

// Without --mfu, each pass is its kernels priced by the device's kernel
// model, and one launch: W1 of a 4096-wide block at b = 1024 is a
// 1024 x 16384 x 4096 GEMM at the model's efficiency for that shape.
TEST(AnalyticByHand, KernelModelByDefault) {
  const models::Model big = models::parse_model("mlp:layers=1,hidden=4096");
  const Device h100 = device_named("h100");
  const KernelModel kernels = kernel_model_for(h100);
  const PassTimes t = analytic_pass_times(big, big.layers[0], h100, DType::bf16, 1024);
  double fwd = 0;
  double w1 = 0;
  for (const models::Kernel& k : models::layer_kernels(big, big.layers[0], 1024, DType::bf16)) {
    if (k.pass == models::KernelPass::forward) fwd += kernel_us(k, kernels, h100, DType::bf16);
    if (k.name == "w1") w1 = kernel_us(k, kernels, h100, DType::bf16);
  }
  EXPECT_DOUBLE_EQ(t.fwd_us, fwd + 5.0);
  EXPECT_DOUBLE_EQ(w1, 2.0 * 1024 * 16384 * 4096 / (989e12 * gemm_efficiency(kernels, 1024, 16384, 4096)) * 1e6 +
                           kernels.kernel_overhead_us);
  // The optimizer streams at the kernel model's memory efficiency.
  EXPECT_DOUBLE_EQ(analytic_optimizer_us(big.layers[0], h100),
                   static_cast<double>(big.layers[0].params) * 32 / (3.35e12 * kernels.memory_efficiency) * 1e6 + 5);
  // --bw-efficiency overrides the model's memory efficiency.
  EXPECT_DOUBLE_EQ(analytic_optimizer_us(big.layers[0], h100, {.bw_efficiency = 0.5}),
                   static_cast<double>(big.layers[0].params) * 32 / (3.35e12 * 0.5) * 1e6 + 5);
}

TEST(AnalyticByHand, Fp8RunsTheGemmsAtTheFp8RateAndStoresAsBf16) {
  const models::Model big = models::parse_model("mlp:layers=1,hidden=4096");
  const Device h100 = device_named("h100");
  const PassTimes f8 = analytic_pass_times(big, big.layers[0], h100, DType::fp8, 1024, kHalf);
  const PassTimes b16 = analytic_pass_times(big, big.layers[0], h100, DType::bf16, 1024, kHalf);
  EXPECT_DOUBLE_EQ(f8.fwd_us, 1024.0 * 4 * 4096 * 16384 / (1979e12 * 0.5) * 1e6 + 5.0);
  EXPECT_DOUBLE_EQ(b16.fwd_us, 1024.0 * 4 * 4096 * 16384 / (989e12 * 0.5) * 1e6 + 5.0);
  // The kernel model too: fp8's GEMMs faster, its memory-bound kernels not.
  const PassTimes k8 = analytic_pass_times(big, big.layers[0], h100, DType::fp8, 1024);
  const PassTimes k16 = analytic_pass_times(big, big.layers[0], h100, DType::bf16, 1024);
  EXPECT_LT(k8.fwd_us, k16.fwd_us);
  EXPECT_GT(k8.fwd_us, k16.fwd_us / 2);
  // The bytes are bf16's, so the profile's sizes and parameters are too.
  const std::vector<int> sizes = {2};
  const Profile p8 = analytic_profile(big, h100, DType::fp8, sizes);
  const Profile p16 = analytic_profile(big, h100, DType::bf16, sizes);
  EXPECT_EQ(p8.dtype, "fp8");
  EXPECT_EQ(p8.layers[0].param_bytes, p16.layers[0].param_bytes);
  EXPECT_EQ(p8.layers[0].samples[0].activation_bytes, p16.layers[0].samples[0].activation_bytes);
  EXPECT_EQ(p8.device_memory_bytes, 85'520'809'984);  // the device's, for --memory-limit device
  EXPECT_EQ(analytic_error_of([&] { return analytic_profile(big, device_named("a100"), DType::fp8, sizes); }),
            "--dtype fp8: a100 has no fp8 tensor cores in the device table");
}

TEST(AnalyticProfile, HeaderNamesSourceDeviceDtypeModelAndLink) {
  const models::Model model = models::parse_model("transformer:heads=2,hidden=8,seq=4,layers=2");
  const std::vector<int> sizes = {1};
  const Profile p = analytic_profile(model, device_named("a100"), DType::fp32, sizes);
  EXPECT_EQ(p.source, "analytic");
  EXPECT_EQ(p.device, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(p.dtype, "fp32");
  EXPECT_EQ(p.model, "transformer:layers=2,hidden=8,heads=2,seq=4");  // canonical
  EXPECT_EQ(p.link, (Link{.latency_us = 5.0, .bandwidth_GBps = 300.0}));
  ASSERT_EQ(p.layers.size(), model.layers.size());
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    EXPECT_EQ(p.layers[i].name, model.layers[i].name);
    EXPECT_EQ(p.layers[i].kind, model.layers[i].kind);
    EXPECT_EQ(p.layers[i].param_bytes, model.layers[i].params * 4);
    EXPECT_EQ(p.layers[i].optimizer_us,
              analytic_optimizer_us(model.layers[i], device_named("a100")));
  }
  const AnalyticOptions slow_link{.link_latency_us = 12.5};
  EXPECT_EQ(analytic_profile(model, kToy, DType::bf16, sizes, slow_link).link,
            (Link{.latency_us = 12.5, .bandwidth_GBps = 7.0}));
}

TEST(AnalyticProfile, SamplesAreTheFormulaAndBytesAreBytesAt) {
  const models::Model model = models::parse_model("transformer:layers=2,hidden=8,heads=2,seq=4");
  const std::vector<int> sizes = {8, 1, 3};  // any order; the profile sorts
  const Device h200 = device_named("h200");
  const Profile p = analytic_profile(model, h200, DType::bf16, sizes);
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    ASSERT_EQ(p.layers[i].samples.size(), 3u);
    EXPECT_TRUE(p.layers[i].has_split_backward());
    for (std::size_t j = 0; j < 3; ++j) {
      const ProfileSample& s = p.layers[i].samples[j];
      const int b = std::vector<int>{1, 3, 8}[j];
      EXPECT_EQ(s.micro_batch_size, b);
      const models::LayerBytes bytes = models::bytes_at(model.layers[i], b, DType::bf16);
      EXPECT_EQ(s.input_bytes, bytes.input_bytes);
      EXPECT_EQ(s.output_bytes, bytes.output_bytes);
      EXPECT_EQ(s.activation_bytes, bytes.activation_bytes);
      const PassTimes t = analytic_pass_times(model, model.layers[i], h200, DType::bf16, b);
      EXPECT_EQ(s.fwd_us, t.fwd_us);
      EXPECT_EQ(s.bwd_input_us, t.bwd_input_us);
      EXPECT_EQ(s.bwd_weight_us, t.bwd_weight_us);
      EXPECT_EQ(s.bwd_us, *s.bwd_input_us + *s.bwd_weight_us);
    }
  }
}

TEST(AnalyticProfile, GrowsWithMicroBatchSize) {
  const models::Model model = models::parse_model("transformer:layers=2,hidden=64,heads=4,seq=32");
  const std::vector<int> sizes = {1, 2, 3, 4, 8, 16, 64};
  const Profile p = analytic_profile(model, device_named("h100"), DType::bf16, sizes);
  for (const LayerProfile& layer : p.layers) {
    for (std::size_t j = 1; j < layer.samples.size(); ++j) {
      const ProfileSample& a = layer.samples[j - 1];
      const ProfileSample& b = layer.samples[j];
      // Every pass streams its stash, which grows with b: strictly slower.
      EXPECT_LT(a.fwd_us, b.fwd_us) << layer.name;
      EXPECT_LT(a.bwd_us, b.bwd_us) << layer.name;
      EXPECT_LE(*a.bwd_input_us, *b.bwd_input_us) << layer.name;  // embed: 0 at every size
      EXPECT_LT(a.activation_bytes, b.activation_bytes) << layer.name;
    }
  }
}

TEST(AnalyticProfile, RoundTripsThroughJson) {
  const models::Model model = models::parse_model("unbalanced:layers=3,hidden=16");
  const std::vector<int> sizes = {1, 2, 4};
  const Profile p = analytic_profile(model, device_named("h100"), DType::bf16, sizes);
  EXPECT_EQ(profile_from_json(to_json(p), "round trip"), p);
}

TEST(AnalyticProfile, RejectsBadSizesAndOptionsNamingThem) {
  const models::Model model = models::parse_model("mlp:layers=1,hidden=4");
  const Device h100 = device_named("h100");
  const auto with_sizes = [&](std::vector<int> sizes, const AnalyticOptions& options = {}) {
    return
        [=, &model, &h100] { return analytic_profile(model, h100, DType::bf16, sizes, options); };
  };
  EXPECT_EQ(analytic_error_of(with_sizes({})), "analytic profile: no micro-batch sizes given");
  EXPECT_EQ(analytic_error_of(with_sizes({2, 0})),
            "analytic profile: micro-batch size must be at least 1, got 0");
  EXPECT_EQ(analytic_error_of(with_sizes({4, 2, 4})), "analytic profile: micro-batch size 4 given twice");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.mfu = 0})),
            "analytic option mfu: expected a number in (0, 1], got 0");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.mfu = 1.5})),
            "analytic option mfu: expected a number in (0, 1], got 1.5");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.bw_efficiency = -0.1})),
            "analytic option bw_efficiency: expected a number in (0, 1], got -0.1");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.launch_overhead_us = -1})),
            "analytic option launch_overhead_us: expected a non-negative number, got -1");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.optimizer_bytes_per_param = -2})),
            "analytic option optimizer_bytes_per_param: expected a non-negative number, got -2");
  EXPECT_EQ(analytic_error_of(with_sizes({1}, {.link_latency_us = -3})),
            "analytic option link_latency_us: expected a non-negative number, got -3");
  EXPECT_EQ(analytic_error_of([&] { return analytic_pass_times(model, model.layers[0], h100, DType::bf16, 0); }),
            "layer 'block0': micro-batch size must be at least 1, got 0");
}

TEST(AnalyticProfile, RefusesSizesWhoseByteCountsOverflow) {
  // The largest spec values: the stash is ~2^45 bytes per sample, so b = INT_MAX
  // overflows int64.
  const models::Model model =
      models::parse_model("transformer:layers=1,hidden=1048576,heads=1,seq=1048576");
  const std::vector<int> sizes = {1, INT_MAX};
  EXPECT_EQ(
      analytic_error_of([&] { return analytic_profile(model, device_named("h100"), DType::bf16, sizes); }),
      "layer 'embed': micro-batch size 2147483647 is too large, its byte counts overflow");
}

// The shipped profiles, as scripts/make-analytic-profiles writes them.
struct Shipped {
  const char* file;
  const char* device;
};
constexpr Shipped kShipped[] = {
    {"transformer-24L-h1024-h100.json", "h100"}, {"transformer-48L-h2048-h100.json", "h100"},
    {"transformer-48L-h2048-h200.json", "h200"}, {"transformer-48L-h2048-a100.json", "a100"},
    {"transformer-32L-h4096-h100.json", "h100"}, {"mlp-16L-h4096-h100.json", "h100"},
    {"unbalanced-16L-h2048-h100.json", "h100"},
};

TEST(ShippedProfiles, LoadAndEqualWhatTheCodeComputes) {
  const std::filesystem::path dir =
      std::filesystem::path(GPIPE_TEST_DATA_DIR) / ".." / ".." / "profiles" / "data";
  const std::vector<int> sizes = {1, 2, 4, 8, 16, 32};
  for (const Shipped& shipped : kShipped) {
    SCOPED_TRACE(shipped.file);
    const std::filesystem::path path = dir / shipped.file;
    ASSERT_TRUE(std::filesystem::exists(path));
    EXPECT_LT(std::filesystem::file_size(path), 1'000'000u);
    const Profile p = load_profile(path);
    EXPECT_EQ(p.source, "analytic");
    EXPECT_EQ(p.device, device_named(shipped.device).name);
    EXPECT_EQ(p.dtype, "bf16");
    // Stale files (the model changed, the script was not rerun) differ here.
    const Profile expected = analytic_profile(models::parse_model(p.model),
                                              device_named(shipped.device), DType::bf16, sizes);
    EXPECT_EQ(p, expected) << "rerun scripts/make-analytic-profiles";
  }
}

TEST(ShippedProfiles, DefaultSweepProfileIsThe48LayerTransformer) {
  const Profile p = load_profile(std::filesystem::path(GPIPE_TEST_DATA_DIR) / ".." / ".." /
                                 "profiles" / "data" / "transformer-48L-h2048-h100.json");
  EXPECT_EQ(p.model, "transformer:layers=48,hidden=2048,heads=16,seq=2048,vocab=32000");
  EXPECT_EQ(p.layers.size(), 50u);  // embed, block0..block47, head
  EXPECT_EQ(p.link, (Link{.latency_us = 5.0, .bandwidth_GBps = 450.0}));
}

}  // namespace
}  // namespace gpipe::profiles
