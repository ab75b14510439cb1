// Per-stage costs: sums over each stage's consecutive layers, converted to
// integer nanoseconds once per stage, and clear errors for a bad partition.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "models/model_spec.hpp"
#include "models/tensor_parallel.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "profiles/profile.hpp"
#include "profiles/stage_costs.hpp"

namespace gpipe::profiles {
namespace {

// Three layers sampled at micro-batch size 4. The 0.0004 us forwards are
// 0.4 ns each: rounded per layer they would vanish, summed per stage they
// make 0.8 ns, which rounds to 1.
Profile three_layers() {
  Profile p;
  p.device = "test";
  p.source = "analytic";
  p.dtype = "fp32";
  p.model = "m";
  p.link = Link{5, 25};
  p.layers = {
      LayerProfile{"embed", "embedding", 10, 0.5, {{4, 1.5, 3.25, 1.0, 2.25, 100, 200, 1000}}},
      LayerProfile{"block", "mlp_block", 20, 0.25, {{4, 2.0004, 4.0, {}, {}, 200, 300, 2000}}},
      LayerProfile{"head", "linear", 30, 0, {{4, 0.0004, 0.0002, {}, {}, 300, 40, 500}}},
  };
  return p;
}

std::string partition_error_of(const std::vector<int>& partition, int micro_batch_size = 4) {
  try {
    (void)stage_costs(three_layers(), partition, micro_batch_size);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

TEST(StageCosts, SumsEachStagesLayers) {
  const std::vector<int> partition = {1, 2};
  const auto stages = stage_costs(three_layers(), partition, 4);
  ASSERT_EQ(stages.size(), 2u);
  // fwd, bwd, I, W, STEP (ns); A_s, In_s, out, params (bytes).
  EXPECT_EQ(stages[0], (StageCost{1500, 3250, 1000, 2250, 500, 1000, 100, 200, 10, 1000}));
  // I and W of the unsplit layers are bwd/2: 2 + 0.0001 us -> 2000 ns each.
  EXPECT_EQ(stages[1], (StageCost{2001, 4000, 2000, 2000, 250, 2500, 200, 40, 50, 2500}));
}

TEST(StageCosts, RoundsOncePerStageNotPerLayer) {
  const std::vector<int> partition = {2, 1};
  const auto stages = stage_costs(three_layers(), partition, 4);
  EXPECT_EQ(stages[0].fwd_ns, 3500);  // 3.5004 us
  EXPECT_EQ(stages[1].fwd_ns, 0);     // 0.4 ns alone rounds down
  const std::vector<int> all = {3};
  EXPECT_EQ(stage_costs(three_layers(), all, 4)[0],
            (StageCost{3501, 7250, 3000, 4250, 750, 3500, 100, 40, 60, 3500}));
}

TEST(StageCosts, ScalesWithTheMicroBatchSize) {
  // One sample per layer: twice the size, twice the time and the bytes;
  // parameters and the optimizer step do not change.
  const std::vector<int> partition = {1, 1, 1};
  const auto stages = stage_costs(three_layers(), partition, 8);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0], (StageCost{3000, 6500, 2000, 4500, 500, 2000, 200, 400, 10, 2000}));
  EXPECT_EQ(stages[1], (StageCost{4001, 8000, 4000, 4000, 250, 4000, 400, 600, 20, 4000}));
  EXPECT_EQ(stages[2], (StageCost{1, 0, 0, 0, 0, 1000, 600, 80, 30, 1000}));
}

TEST(StageCosts, TheDesignExampleInNanoseconds) {
  const Profile p = load_profile(std::filesystem::path(GPIPE_TEST_DATA_DIR) / "profiles" /
                                 "design_example.json");
  const std::vector<int> partition = {1};
  EXPECT_EQ(stage_costs(p, partition, 8)[0],
            (StageCost{812000, 1650000, 820000, 830000, 0, 201326592, 16777216, 16777216,
                       25165824, 201326592}));
}

TEST(StageCosts, RejectsAPartitionThatMissesLayers) {
  EXPECT_EQ(partition_error_of({1, 1}), "partition 1,1: 2 layers in all, but the profile has 3");
  EXPECT_EQ(partition_error_of({2, 2}), "partition 2,2: 4 layers in all, but the profile has 3");
}

TEST(StageCosts, RejectsAnEmptyStage) {
  EXPECT_EQ(partition_error_of({2, 0, 1}),
            "partition 2,0,1: stage 1 has 0 layers; every stage needs at least one");
  EXPECT_EQ(partition_error_of({4, -1}),
            "partition 4,-1: stage 1 has -1 layers; every stage needs at least one");
}

TEST(StageCosts, RejectsNoStages) { EXPECT_EQ(partition_error_of({}), "partition: no stages given"); }

TEST(StageCosts, RejectsANonPositiveMicroBatchSize) {
  EXPECT_EQ(partition_error_of({3}, 0), "micro-batch size must be positive (got 0)");
}


// Megatron's full recompute over three layers where only the middle is a
// block: the block keeps its input (200 of its 2000 bytes), its B runs its
// forward again first, and while F or B runs the stage holds the block whole
// on top of what the embedding keeps.
TEST(StageCosts, FullRecomputeKeepsTheCheckpointsAndRebuildsInTheBackward) {
  const std::vector<int> partition = {3};
  const StageCost none = stage_costs(three_layers(), partition, 4)[0];
  const StageCost full = stage_costs(three_layers(), partition, 4, models::Checkpointing{})[0];
  EXPECT_EQ(full.activation_bytes, 1000 + 200 + 500);
  // Worst: the block whole after the embedding's 1000: 3000, 1300 above 1700.
  EXPECT_EQ(full.transient_bytes, 1300);
  EXPECT_EQ(full.fwd_ns, none.fwd_ns);
  // + the block's 2.0004 us forward, rounded once: 7.2502 + 2.0004 us.
  EXPECT_EQ(none.bwd_ns, 7250);
  EXPECT_EQ(full.bwd_ns, 9251);
  EXPECT_NEAR(full.bwd_input_ns, none.bwd_input_ns + 2000, 1);
  EXPECT_EQ(none.transient_bytes, 0);
}

// Korthikanti et al. (arXiv 2205.05198) Table 2, full recompute: a layer
// keeps 2sbh bytes in 16-bit, its input; over t ranks without sequence
// parallelism every rank keeps the whole input, with it 2sbh/t.
TEST(StageCosts, FullRecomputeKeepsTwoSbhABlockAsKorthikantiTable2) {
  const models::Model whole = models::parse_model("transformer:layers=4,hidden=64,heads=4,seq=32,vocab=128");
  const int b = 3;
  const std::int64_t sbh2 = 2LL * 32 * b * 64;
  for (const bool sp : {false, true}) {
    const models::Model split = models::split_tensor_parallel(whole, {.degree = 2, .sequence_parallel = sp});
    const std::vector<int> sizes = {b};
    const Profile profile = analytic_profile(split, device_named("a100"), models::DType::bf16, sizes);
    // The four blocks in one stage, the embedding and head in their own.
    const std::vector<int> partition = {1, 4, 1};
    const StageCost blocks = stage_costs(profile, partition, b, models::Checkpointing{})[1];
    EXPECT_EQ(blocks.activation_bytes, 4 * (sp ? sbh2 / 2 : sbh2)) << "sequence parallel " << sp;
    // Rebuilding the last block adds it whole but for its input.
    const StageCost kept_whole = stage_costs(profile, partition, b)[1];
    EXPECT_EQ(blocks.transient_bytes, kept_whole.activation_bytes / 4 - (sp ? sbh2 / 2 : sbh2));
  }
}

}  // namespace
}  // namespace gpipe::profiles
