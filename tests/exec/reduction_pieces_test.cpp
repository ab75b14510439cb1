// reduction_pieces: every value of every gradient in exactly one piece, in
// order, none over the bucket, and the bytes the simulator prices.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "exec/runtime/reduction_pieces.hpp"

namespace gpipe::exec {
namespace {

TEST(ReductionPieces, CutsEachTensorInBucketsInPlace) {
  const std::vector<std::int64_t> sizes{10, 0, 4, 25};
  const std::vector<ReductionPiece> expected{{0, 0, 8}, {0, 8, 2}, {2, 0, 4}, {3, 0, 8}, {3, 8, 8}, {3, 16, 8}, {3, 24, 1}};
  EXPECT_EQ(reduction_pieces(sizes, 8), expected);
}

TEST(ReductionPieces, ABucketOverEveryTensorIsOnePieceEach) {
  const std::vector<std::int64_t> sizes{3, 5};
  const std::vector<ReductionPiece> expected{{0, 0, 3}, {1, 0, 5}};
  EXPECT_EQ(reduction_pieces(sizes, 6'250'000), expected);  // 25 MB of floats
}

TEST(ReductionPieces, ABucketOfNothingIsRefused) {
  const std::vector<std::int64_t> sizes{3};
  EXPECT_THROW((void)reduction_pieces(sizes, 0), std::invalid_argument);
}

}  // namespace
}  // namespace gpipe::exec
