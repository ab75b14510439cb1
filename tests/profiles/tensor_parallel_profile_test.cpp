// The analytic profile of a model split over a tensor-parallel group
// (models/tensor_parallel.hpp): each pass is the split layer's roofline plus
// its collectives, priced by hand from profiles/collectives.hpp's closed forms
// on a 1 GB/s link with 5 us latency (a byte costs 1 ns), in bf16; the
// profile says its degree, and reads back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/profile.hpp"
#include "tests/error_of.hpp"

namespace gpipe::profiles {
namespace {

using models::DType;

const Device kSlowLink{.key = "slow-link",
                       .name = "slow link",
                       .bf16_tflops = 1000,
                       .fp32_tflops = 100,
                       .hbm_TBps = 3,
                       .link_GBps = 1.0,
                       .memory_bytes = 80'000'000'000};

constexpr const char* kLlama = "llama:layers=2,hidden=64,heads=4,kv_heads=2,ffn=96,seq=16,vocab=101";

// E = S x H = 1024 elements, 2048 bytes in bf16; over 2 GPUs:
//   ring all-reduce 2 (5 + 2048 / 2 / 1000) = 12.048 us (the tree: 14.096)
//   ring all-gather or reduce-scatter 5 + 1.024 = 6.024 us
//   the head's all-reduces of S = 16 elements: 2 (5 + 0.016) = 10.032 us
constexpr double kAllReduceE = 12.048;
constexpr double kGatherE = 6.024;
constexpr double kAllReduceS = 10.032;

TEST(TensorParallelProfile, EachPassAddsItsCollectives) {
  const models::Model model = models::split_tensor_parallel(models::parse_model(kLlama), {.degree = 2});
  const Profile p = analytic_profile(model, kSlowLink, DType::bf16, std::vector<int>{1});
  EXPECT_EQ(p.tensor_parallel, 2);
  EXPECT_FALSE(p.sequence_parallel);
  const auto check = [&](std::size_t i, double fwd, double input, double weight) {
    const PassTimes compute = analytic_pass_times(model, model.layers[i], kSlowLink, DType::bf16, 1);
    const ProfileSample& s = p.layers[i].samples.front();
    EXPECT_NEAR(s.fwd_us - compute.fwd_us, fwd, 1e-9) << i;
    EXPECT_NEAR(*s.bwd_input_us - compute.bwd_input_us, input, 1e-9) << i;
    EXPECT_NEAR(*s.bwd_weight_us - compute.bwd_weight_us, weight, 1e-9) << i;
    EXPECT_NEAR(s.bwd_us, *s.bwd_input_us + *s.bwd_weight_us, 1e-9) << i;
  };
  check(0, kAllReduceE, 0, 0);                    // the embedding: one all-reduce forward
  check(1, 2 * kAllReduceE, 2 * kAllReduceE, 0);  // a block: two each way
  check(3, 3 * kAllReduceS, kAllReduceE, 0);      // the head
}

TEST(TensorParallelProfile, SequenceParallelGathersAgainInTheWeightGradient) {
  const models::Model model =
      models::split_tensor_parallel(models::parse_model(kLlama), {.degree = 2, .sequence_parallel = true});
  const Profile p = analytic_profile(model, kSlowLink, DType::bf16, std::vector<int>{1, 2});
  EXPECT_TRUE(p.sequence_parallel);
  const models::Layer& block = model.layers[1];
  const PassTimes compute = analytic_pass_times(model, block, kSlowLink, DType::bf16, 1);
  const ProfileSample& s = p.layers[1].samples.front();
  // Forward and input gradient: two gathers and two scatters each, the
  // all-reduces' time; W: two gathers of the norms, and a split W two more.
  EXPECT_NEAR(s.fwd_us - compute.fwd_us, 4 * kGatherE, 1e-9);
  EXPECT_NEAR(*s.bwd_input_us - compute.bwd_input_us, 4 * kGatherE, 1e-9);
  EXPECT_NEAR(*s.bwd_weight_us - compute.bwd_weight_us, 4 * kGatherE, 1e-9);
  EXPECT_NEAR(s.bwd_us - compute.bwd_input_us - compute.bwd_weight_us, 6 * kGatherE, 1e-9);
  // At b = 2 each message doubles: 5 + 2.048 us a gather.
  const ProfileSample& s2 = p.layers[1].samples.back();
  const PassTimes compute2 = analytic_pass_times(model, block, kSlowLink, DType::bf16, 2);
  EXPECT_NEAR(s2.fwd_us - compute2.fwd_us, 4 * 7.048, 1e-9);
  // A stage's message is half the activation: [8, 64] in bf16.
  EXPECT_EQ(s.output_bytes, 8 * 64 * 2);
}

TEST(TensorParallelProfile, SaysItsDegreeAndReadsBack) {
  const models::Model model =
      models::split_tensor_parallel(models::parse_model(kLlama), {.degree = 2, .sequence_parallel = true});
  const Profile p = analytic_profile(model, kSlowLink, DType::bf16, std::vector<int>{1});
  const nlohmann::json json = to_json(p);
  EXPECT_EQ(json.at("tensor_parallel"), 2);
  EXPECT_EQ(json.at("sequence_parallel"), true);
  EXPECT_EQ(profile_from_json(json, "round trip"), p);
  // A whole model's profile writes neither.
  const Profile whole = analytic_profile(models::parse_model(kLlama), kSlowLink, DType::bf16, std::vector<int>{1});
  EXPECT_FALSE(to_json(whole).contains("tensor_parallel"));
  nlohmann::json bad = to_json(whole);
  bad["sequence_parallel"] = true;
  EXPECT_EQ(gpipe::testing::error_of([&] { (void)profile_from_json(bad, "p.json"); }),
            "p.json: sequence_parallel: sequence parallelism needs a tensor_parallel of 2 or more");
  bad = to_json(whole);
  bad["tensor_parallel"] = 0;
  EXPECT_NE(gpipe::testing::error_of([&] { (void)profile_from_json(bad, "p.json"); }).find("p.json: tensor_parallel"),
            std::string::npos);
}

}  // namespace
}  // namespace gpipe::profiles
