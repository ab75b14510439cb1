// Where a cluster plan's GPUs sit (plan/cluster.hpp): TP groups inside a
// node, a replica's stages in a row, the same stage of every replica a DP group.
#include <gtest/gtest.h>

#include "plan/cluster.hpp"
#include "tests/error_of.hpp"

namespace gpipe::plan {
namespace {

using gpipe::testing::error_of;

// 64 GPUs, 8 a node: TP 8, 4 stages, 2 replicas: a stage a node, every boundary across nodes.
TEST(ClusterPlacement, AStageANode) {
  const ClusterPlacement p({64, 8}, {.tensor = 8, .pipeline = 4, .data = 2});
  EXPECT_EQ(p.gpu(0, 0, 0), 0);
  EXPECT_EQ(p.gpu(0, 1, 0), 8);
  EXPECT_EQ(p.gpu(1, 0, 3), 35);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(p.boundary_crosses_nodes(k)) << k;
  EXPECT_EQ(p.data_parallel_group(2, 5), (std::vector<int>{21, 53}));
  EXPECT_EQ(p.nodes_spanned_by_data_parallel_group(), 2);
  EXPECT_EQ(p.describe(),
            "64 GPUs, 8 nodes of 8: TP 8 inside a node, 4 stages to a pipeline, 2 pipelines; stage boundaries "
            "inside a node: 0 of 3; a DP group spans 2 node(s)");
}

// TP 2, 4 stages: a replica is one node, no boundary crosses; 8 replicas, their DP groups across 8 nodes.
TEST(ClusterPlacement, AReplicaANode) {
  const ClusterPlacement p({64, 8}, {.tensor = 2, .pipeline = 4, .data = 8});
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(p.boundary_crosses_nodes(k)) << k;
  EXPECT_EQ(p.data_parallel_group(1, 1), (std::vector<int>{3, 11, 19, 27, 35, 43, 51, 59}));
  EXPECT_EQ(p.nodes_spanned_by_data_parallel_group(), 8);
}

// TP 2, 8 stages of 2 GPUs: a replica is two nodes; the boundary between stages 3 and 4 crosses.
TEST(ClusterPlacement, StagesShareANodeWhileTheyFit) {
  const ClusterPlacement p({32, 8}, {.tensor = 2, .pipeline = 8, .data = 2});
  for (int k = 0; k < 7; ++k) EXPECT_EQ(p.boundary_crosses_nodes(k), k == 3) << k;
  // TP 2, 3 stages (6 GPUs a replica) on nodes of 4: where boundaries fall differs by replica.
  const ClusterPlacement uneven({12, 4}, {.tensor = 2, .pipeline = 3, .data = 2});
  EXPECT_TRUE(uneven.boundary_crosses_nodes(0));   // replica 1: GPUs 6-7 | 8-9
  EXPECT_TRUE(uneven.boundary_crosses_nodes(1));   // replica 0: GPUs 2-3 | 4-5
}

TEST(ClusterPlacement, TheLastNodeMayBePartlyUsed) {
  const ClusterPlacement four({4, 8}, {.tensor = 2, .pipeline = 2, .data = 1});
  EXPECT_FALSE(four.boundary_crosses_nodes(0));
  EXPECT_EQ(four.describe(),
            "4 GPUs, 1 node of 8 (the last with 4): TP 2 inside a node, 2 stages to a pipeline, 1 pipelines; stage "
            "boundaries inside a node: 1 of 1; a DP group spans 1 node(s)");
  const ClusterPlacement twelve({12, 8}, {.tensor = 1, .pipeline = 12, .data = 1});
  EXPECT_TRUE(twelve.boundary_crosses_nodes(7));
  EXPECT_FALSE(twelve.boundary_crosses_nodes(8));
}

TEST(ClusterPlacement, RefusesWhatCannotBe) {
  EXPECT_EQ(error_of([] { (void)ClusterPlacement({64, 8}, {.tensor = 8, .pipeline = 4, .data = 4}); }),
            "--tensor-parallel 8 x --stages 4 x --data-parallel 4 = 128 GPUs, but --gpus is 64");
  EXPECT_EQ(error_of([] { (void)ClusterPlacement({48, 8}, {.tensor = 3, .pipeline = 2, .data = 8}); }),
            "--tensor-parallel 3 does not divide --gpus-per-node 8: a tensor-parallel group lies inside one node");
  EXPECT_EQ(error_of([] { (void)ClusterPlacement({8, 8}, {.tensor = 0, .pipeline = 8, .data = 1}); }),
            "--tensor-parallel 0, --stages 8, --data-parallel 1: each is at least 1");
}

}  // namespace
}  // namespace gpipe::plan

namespace gpipe::plan {
namespace {

// Context parallelism: a stage is T x C GPUs, T inside a node and C such
// groups beside it (Megatron-LM's tp-cp order): T 8 x C 2 fills two nodes.
TEST(ClusterPlacement, AContextGroupWidensAStage) {
  const ClusterPlacement p({64, 8}, {.tensor = 8, .pipeline = 2, .data = 2, .context = 2});
  EXPECT_EQ(p.gpu(0, 1, 0), 16);
  EXPECT_EQ(p.gpu(1, 0, 15), 47);
  EXPECT_TRUE(p.boundary_crosses_nodes(0));  // each stage two nodes of its own
  EXPECT_EQ(p.describe(),
            "64 GPUs, 8 nodes of 8: TP 8 inside a node, CP 2 beside it (16 GPUs a stage), 2 stages to a pipeline, "
            "2 pipelines; stage boundaries inside a node: 0 of 1; a DP group spans 2 node(s)");
  // T 2 x C 2 inside a node of 8: two stages share it.
  const ClusterPlacement small({16, 8}, {.tensor = 2, .pipeline = 2, .data = 2, .context = 2});
  EXPECT_FALSE(small.boundary_crosses_nodes(0));
  EXPECT_EQ(testing::error_of([] { (void)ClusterPlacement({48, 8}, {.tensor = 2, .pipeline = 2, .data = 2, .context = 6}); }),
            "--tensor-parallel 2 x --context-parallel 6 = 12 GPUs a stage: neither divides nor fills whole nodes of 8");
  EXPECT_EQ(testing::error_of([] { (void)ClusterPlacement({64, 8}, {.tensor = 8, .pipeline = 2, .data = 1, .context = 2}); }),
            "--tensor-parallel 8 x --context-parallel 2 x --stages 2 x --data-parallel 1 = 32 GPUs, but --gpus is 64");
}

}  // namespace
}  // namespace gpipe::plan
