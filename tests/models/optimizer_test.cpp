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

}  // namespace
}  // namespace gpipe::models
