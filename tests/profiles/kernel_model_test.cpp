// The kernel model: wave and tile quantization and the k ramp worked out by
// hand, each kernel kind's time, the shipped tables (they parse, name their
// source, and a device without one gets the H100's, saying so), and the
// reader's errors.
#include <gtest/gtest.h>

#include <string>

#include "profiles/kernel_model.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using models::DType;
using models::Kernel;
using models::KernelKind;
using models::KernelPass;

// 4 SMs, one 2 x 2 tile, k_half 64, a full wave at 0.5.
KernelModel toy() {
  return {.device = "toy", .source = "by hand", .sms = 4, .tiles = {{.m = 2, .n = 2, .scale = 1.0}},
          .gemm_efficiency = 0.5, .gemm_k_half = 64, .attention_forward_efficiency = 0.25,
          .attention_backward_efficiency = 0.2, .memory_efficiency = 0.5, .kernel_overhead_us = 1};
}

TEST(KernelModel, WaveQuantizationAndTheKRampByHand) {
  const KernelModel m = toy();
  // 4 x 4: 4 tiles, one full wave; k 64: 64 / 128.
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 4, 4, 64), 0.5 * 1.0 * 0.5);
  // 4 x 2: 2 tiles on 4 SMs, half a wave.
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 4, 2, 64), 0.5 * 0.5 * 0.5);
  // 6 x 4: 3 x 2 = 6 tiles, 2 waves of 4: 6 / 8.
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 6, 4, 192), 0.5 * 0.75 * 0.75);
  // A batch of 5 of 2 x 2: 5 tiles, 2 waves: 5 / 8.
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 2, 2, 64, 5), 0.5 * 0.625 * 0.5);
}

TEST(KernelModel, TheBestTileWinsWithItsScale) {
  KernelModel m = toy();
  m.tiles = {{.m = 4, .n = 4, .scale = 1.0}, {.m = 2, .n = 2, .scale = 0.9}};
  // 4 x 2: the big tile fills 1 of 4 SMs (0.25), the small 2 of 4 at 0.9 (0.45).
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 4, 2, 64), 0.5 * 0.45 * 0.5);
  // 8 x 8: the big tile fills the wave (1.0) and beats the small one's 0.9.
  EXPECT_DOUBLE_EQ(gemm_efficiency(m, 8, 8, 64), 0.5 * 1.0 * 0.5);
}

// 1e12 FLOP/s and 1e12 bytes/s: the times below read off the counts.
const Device kTera{.key = "tera", .name = "tera", .bf16_tflops = 1, .fp32_tflops = 1, .hbm_TBps = 1,
                   .link_GBps = 1, .memory_bytes = 1};

TEST(KernelModel, EachKindsTime) {
  const KernelModel m = toy();
  // A memory kernel of 1e6 bytes at half the bandwidth: 2 us, and 1 us of gap.
  EXPECT_DOUBLE_EQ(kernel_us({.kind = KernelKind::memory, .bytes = 1e6}, m, kTera, DType::bf16), 3.0);
  // A 4 x 4 x 64 GEMM batched 1e6 times: 4e6 tiles fill whole waves, k 64
  // halves it, so 2.048e9 FLOPs at 0.25 of 1e12.
  const Kernel gemm{.kind = KernelKind::gemm, .m = 4, .n = 4, .k = 64, .batch = 1000000,
                    .flops = 2.0 * 4 * 4 * 64 * 1e6, .bytes = 0};
  EXPECT_DOUBLE_EQ(kernel_us(gemm, m, kTera, DType::bf16), 2.048e9 / 2.5e11 * 1e6 + 1);
  // A GEMM whose operands outweigh its FLOPs is memory-bound.
  const Kernel thin{.kind = KernelKind::gemm, .m = 4, .n = 4, .k = 64, .flops = 2048, .bytes = 1e6};
  EXPECT_DOUBLE_EQ(kernel_us(thin, m, kTera, DType::bf16), 3.0);
  // Attention: 1e6 FLOPs at 0.25 forward (4 us), 0.2 backward (5 us).
  EXPECT_DOUBLE_EQ(kernel_us({.pass = KernelPass::forward, .kind = KernelKind::attention, .flops = 1e6}, m, kTera,
                             DType::bf16),
                   5.0);
  EXPECT_DOUBLE_EQ(kernel_us({.pass = KernelPass::input, .kind = KernelKind::attention, .flops = 1e6}, m, kTera,
                             DType::bf16),
                   6.0);
  // A roofline kernel at the full wave's efficiency: 1e6 FLOPs at 0.5: 2 us.
  EXPECT_DOUBLE_EQ(kernel_us({.kind = KernelKind::roofline, .flops = 1e6, .bytes = 1}, m, kTera, DType::bf16), 3.0);
}

TEST(KernelModel, ShippedTablesNameTheirSourceAndOthersGetTheH100s) {
  ASSERT_FALSE(known_kernel_models().empty());
  for (const KernelModel& m : known_kernel_models()) {
    EXPECT_NE(m.source.find("fitted by scripts/fit-kernels"), std::string::npos) << m.device;
    EXPECT_EQ(device_named(m.device).key, m.device);  // each is for a device of the table
  }
  const KernelModel a100 = kernel_model_for(device_named("a100"));
  EXPECT_EQ(a100.device, "a100");
  EXPECT_EQ(a100.sms, 108);
  const KernelModel h200 = kernel_model_for(device_named("h200"));
  EXPECT_EQ(h200.device, "h200");
  EXPECT_EQ(h200.sms, kernel_model_for(device_named("h100")).sms);
  EXPECT_EQ(h200.source.rfind("no kernel table for h200: the H100's", 0), 0U) << h200.source;
}

std::string parse_error(const std::string& json) {
  return testing::error_of([&] { (void)parse_kernel_model(json, "k.json"); });
}

TEST(KernelModel, ReaderErrorsNameTheField) {
  const std::string good =
      R"({"device": "x", "source": "s", "sms": 4, "gemm": {"tiles": [{"m": 2, "n": 2, "scale": 1}], )"
      R"("efficiency": 0.5, "k_half": 64}, "attention": {"forward_efficiency": 0.5, "backward_efficiency": 0.5}, )"
      R"("memory_efficiency": 0.5, "kernel_overhead_us": 0})";
  EXPECT_EQ(parse_kernel_model(good, "k.json").tiles.size(), 1U);
  EXPECT_EQ(parse_error("{").find('\n'), std::string::npos);  // one line, whatever JSON's reader says
  EXPECT_NE(parse_error("{").find("k.json"), std::string::npos);
  std::string over = good;
  over.replace(over.find("\"efficiency\": 0.5"), 17, "\"efficiency\": 1.5");
  EXPECT_EQ(parse_error(over), "k.json: gemm.efficiency: expected a fraction in (0, 1]");
  std::string no_sms = good;
  no_sms.replace(no_sms.find("\"sms\": 4, "), 10, "");
  EXPECT_EQ(parse_error(no_sms), "k.json: sms: is missing");
  std::string no_tiles = good;
  const std::string tile = R"([{"m": 2, "n": 2, "scale": 1}])";
  no_tiles.replace(no_tiles.find(tile), tile.size(), "[]");
  EXPECT_EQ(parse_error(no_tiles), "k.json: gemm.tiles: expected a non-empty array");
}

}  // namespace
}  // namespace gpipe::profiles
