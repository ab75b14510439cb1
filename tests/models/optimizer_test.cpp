// The optimizer: its names both ways, in the order the flags list them, and
// the static bytes per parameter of models/optimizer.hpp's table.
#include <gtest/gtest.h>

#include "models/optimizer.hpp"
#include "tests/error_of.hpp"

namespace gpipe::models {
namespace {

TEST(Optimizer, NamesBothWays) {
  EXPECT_EQ(optimizer_names(), (std::vector<std::string>{"sgd", "momentum", "adamw"}));
  for (const std::string& name : optimizer_names()) {
    const auto parsed = parse_optimizer(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(to_string(*parsed), name);
  }
  EXPECT_EQ(parse_optimizer("adam"), std::nullopt);
}

TEST(Optimizer, StaticBytesPerParameter) {
  EXPECT_EQ(static_bytes_per_param(Optimizer::sgd, "fp32"), 8);
  EXPECT_EQ(static_bytes_per_param(Optimizer::momentum, "fp32"), 12);
  EXPECT_EQ(static_bytes_per_param(Optimizer::adamw, "fp32"), 16);
  // 16-bit weights and gradients plus an fp32 master copy: the same totals.
  EXPECT_EQ(static_bytes_per_param(Optimizer::sgd, "bf16"), 8);
  EXPECT_EQ(static_bytes_per_param(Optimizer::adamw, "fp16"), 16);
  // fp8 GEMMs store as bf16: the mixed-precision totals too.
  EXPECT_EQ(static_bytes_per_param(Optimizer::adamw, "fp8"), 16);
  EXPECT_EQ(gpipe::testing::error_of([] { (void)static_bytes_per_param(Optimizer::sgd, "int4"); }),
            "dtype 'int4': unknown (fp32, bf16, fp16, fp8)");
}

// ZeRO's Figure 1 (arXiv 1910.02054): 7.5 B parameters, bf16 with AdamW
// (2 + 2 + 12 bytes each), 64 data-parallel GPUs.
TEST(Optimizer, ZeroShardsAsThePaperCounts) {
  const std::int64_t psi = 7'500'000'000;
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi).total(), 120'000'000'000);
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 1, 64).total(), 31'406'250'000);  // 4 psi + 12 psi / 64
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 2, 64).total(), 16'640'625'000);  // 2 psi + 14 psi / 64
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 3, 64).total(), 1'875'000'000);   // 16 psi / 64
  // Which part each stage shards, and the ceiling of an uneven share.
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", 10, 2, 4),
            (StaticBytes{.weights = 20, .gradients = 2 * 3, .optimizer_state = 12 * 3}));
  EXPECT_EQ(static_bytes(Optimizer::momentum, "fp32", 10, 1, 4),
            (StaticBytes{.weights = 40, .gradients = 40, .optimizer_state = 4 * 3}));
  // Stage 0, or one replica: all of it, as static_bytes_per_param says.
  EXPECT_EQ(static_bytes(Optimizer::sgd, "fp32", 1000, 3, 1).total(), 1000 * static_bytes_per_param(Optimizer::sgd, "fp32"));
  EXPECT_EQ(gpipe::testing::error_of([] { (void)static_bytes(Optimizer::adamw, "bf16", 10, 4, 2); }),
            "--zero 4: ZeRO has stages 0 to 3");
  EXPECT_EQ(gpipe::testing::error_of([] { (void)static_bytes(Optimizer::adamw, "bf16", 10, 1, 0); }),
            "--data-parallel 0: a pipeline has at least one replica");
}

// fp32 main gradients (Megatron-LM's main_grad, --accumulate-allreduce-grads-in-fp32): 4 bytes a
// gradient whatever the dtype. Megatron-LM's own count (its distributed optimizer's documentation): 18 bytes a
// parameter for bf16 with AdamW, and 6 + 12 / D with its distributed optimizer (ZeRO 1 here).
TEST(Optimizer, Fp32MainGradientsAreMegatronsEighteenBytes) {
  EXPECT_EQ(static_bytes_per_param(Optimizer::adamw, "bf16", /*fp32_main_grads=*/true), 18);
  EXPECT_EQ(static_bytes_per_param(Optimizer::adamw, "fp32", /*fp32_main_grads=*/true), 16);  // already fp32
  EXPECT_EQ(gradient_bytes_per_element("bf16", true), 4);
  EXPECT_EQ(gradient_bytes_per_element("bf16", false), 2);
  const std::int64_t psi = 8'000'000'000;
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 0, 64, true).total(), 18 * psi);
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 1, 64, true).total(), 6 * psi + 12 * psi / 64);
  EXPECT_EQ(static_bytes(Optimizer::adamw, "bf16", psi, 2, 64, true),
            (StaticBytes{.weights = 2 * psi, .gradients = 4 * psi / 64, .optimizer_state = 12 * psi / 64}));
}

}  // namespace
}  // namespace gpipe::models
