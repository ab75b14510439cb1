// zero_shards: each piece cut into D runs in replica order, every value in
// exactly one replica's run, and replica d holding floor(P / D) values over
// the stage, one more for d < P mod D (so replica 0 holds the ceil(P / D)
// that models::static_bytes counts), checked to the value.
#include "exec/runtime/zero_shards.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "models/optimizer.hpp"

namespace gpipe::exec {
namespace {

TEST(ZeroShards, EachPieceIsCutAsARoundRobinDealWouldShareIt) {
  // Pieces of 7, 3 and 5 values over 3 replicas. The deal gives the first
  // piece's values 0..6 to replicas 0,1,2,0,1,2,0: 3, 2, 2. The second
  // piece starts at value 7 (replica 1): 1,2,0: one each. The third at 10
  // (replica 1): 1,2,0,1,2: 1, 2, 2.
  const std::vector<std::int64_t> sizes{7, 3, 5};
  const auto pieces = sharded_pieces(sizes, 100, 3);
  ASSERT_EQ(pieces.size(), 3U);
  EXPECT_EQ(pieces[0].counts, (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(pieces[0].displacements, (std::vector<int>{0, 3, 5}));
  EXPECT_EQ(pieces[1].counts, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(pieces[2].counts, (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(pieces[2].displacements, (std::vector<int>{0, 1, 3}));
}

TEST(ZeroShards, ReplicasHoldTheDealsShareOfTheStage) {
  // 15 values over 4 replicas: 4, 4, 4, 3.
  const std::vector<std::int64_t> sizes{7, 3, 5};
  std::vector<std::int64_t> held;
  for (int d = 0; d < 4; ++d) {
    std::int64_t sum = 0;
    for (const auto& runs : owned_ranges(sizes, 100, 4, d)) {
      for (const ValueRange& r : runs) sum += r.count;
    }
    held.push_back(sum);
  }
  EXPECT_EQ(held, (std::vector<std::int64_t>{4, 4, 4, 3}));
  // Replica 0's share is the static memory model's, to the byte (AdamW, fp32: 8 bytes of state a value).
  EXPECT_EQ(models::static_bytes(models::Optimizer::adamw, "fp32", 15, 1, 4).optimizer_state, 8 * held[0]);
}

TEST(ZeroShards, EveryValueIsOwnedByExactlyOneReplica) {
  // A bucket of 4 cuts the 10-value tensor into 4, 4, 2; an empty tensor has no piece.
  const std::vector<std::int64_t> sizes{10, 0, 3};
  std::vector<std::vector<int>> owners{std::vector<int>(10, 0), {}, std::vector<int>(3, 0)};
  for (int d = 0; d < 3; ++d) {
    const auto owned = owned_ranges(sizes, 4, 3, d);
    ASSERT_EQ(owned.size(), 3U);
    EXPECT_TRUE(owned[1].empty());
    for (std::size_t t = 0; t < owned.size(); ++t) {
      for (const ValueRange& r : owned[t]) {
        for (std::int64_t v = r.first; v < r.first + r.count; ++v) ++owners[t][static_cast<std::size_t>(v)];
      }
    }
  }
  for (const auto& tensor : owners) {
    for (int count : tensor) EXPECT_EQ(count, 1);
  }
  // Replica 2's runs, the last of each piece's three: piece {0,0,4} from
  // value 0 (replica 0) counts 2,1,1: its run at 3; piece {0,4,4} from value
  // 4 (replica 1) counts 1,2,1: at 4 + 3; piece {0,8,2} from value 8
  // (replica 2) counts 1,0,1: at 8 + 1; piece {2,0,3} counts 1,1,1: at 2.
  const auto owned = owned_ranges(sizes, 4, 3, 2);
  EXPECT_EQ(owned[0], (std::vector<ValueRange>{{3, 1}, {7, 1}, {9, 1}}));
  EXPECT_EQ(owned[2], (std::vector<ValueRange>{{2, 1}}));
}

TEST(ZeroShards, OneReplicaOwnsEverything) {
  const std::vector<std::int64_t> sizes{5, 2};
  EXPECT_EQ(owned_ranges(sizes, 100, 1, 0), whole_ranges(sizes));
}

TEST(ZeroShards, AReplicaOutsideItsGroupIsRefused) {
  const std::vector<std::int64_t> sizes{5};
  EXPECT_THROW((void)owned_ranges(sizes, 100, 2, 2), std::invalid_argument);
  EXPECT_THROW((void)sharded_pieces(sizes, 100, 0), std::invalid_argument);
}

}  // namespace
}  // namespace gpipe::exec
