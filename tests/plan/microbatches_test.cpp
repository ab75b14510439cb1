// Micro-batches: N split as torch.tensor_split, M of exactly b, and the sizes
// a grid needs profiled; M < 1 and M > N refused with the flag's message.
#include <gtest/gtest.h>

#include "plan/microbatches.hpp"
#include "tests/error_of.hpp"

namespace gpipe::plan {
namespace {

using gpipe::testing::error_of;

TEST(SplitBatch, AsTorchTensorSplit) {
  EXPECT_EQ(split_batch(8, 4), (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(split_batch(10, 4), (std::vector<int>{3, 3, 2, 2}));
  EXPECT_EQ(split_batch(7, 7), (std::vector<int>(7, 1)));
  EXPECT_EQ(split_batch(5, 1), (std::vector<int>{5}));
  EXPECT_EQ(error_of([] { (void)split_batch(3, 4); }),
            "--microbatches 4 exceeds --batch 3: every micro-batch needs a sample");
  EXPECT_EQ(error_of([] { (void)split_batch(3, 0); }), "--microbatches must be at least 1, got 0");
}

TEST(MicrobatchSizes, TheBatchOrTheMicroBatchSize) {
  EXPECT_EQ(microbatch_sizes(4, 10, 0), (std::vector<int>{3, 3, 2, 2}));
  EXPECT_EQ(microbatch_sizes(3, 0, 5), (std::vector<int>{5, 5, 5}));
  EXPECT_EQ(error_of([] { (void)microbatch_sizes(3, 0, 0); }), "give --batch N or --micro-batch-size b");
  EXPECT_EQ(error_of([] { (void)microbatch_sizes(0, 0, 5); }), "--microbatches must be at least 1, got 0");
  EXPECT_EQ(error_of([] { (void)microbatch_sizes(0, 4, 0); }), "--microbatches must be at least 1, got 0");
}

TEST(MicrobatchSizes, DistinctAscending) {
  EXPECT_EQ(distinct_sizes(std::vector<int>{3, 3, 2, 2}), (std::vector<int>{2, 3}));
  EXPECT_EQ(distinct_sizes(std::vector<int>{5}), (std::vector<int>{5}));
}

TEST(MicrobatchSizes, NeededCoverEverySplit) {
  // 10 into 1: 10; into 3: 4,3,3; into 4: 3,3,2,2; into 20: impossible, adds none.
  EXPECT_EQ(microbatch_sizes_needed(10, std::vector<int>{1, 3, 4, 20}), (std::vector<int>{2, 3, 4, 10}));
  EXPECT_TRUE(microbatch_sizes_needed(2, std::vector<int>{3}).empty());
}

}  // namespace
}  // namespace gpipe::plan
