// A pipeline's links on a cluster, worked by hand: inside a node the node's
// link, between nodes the network, and with Megatron's scatter/gather the
// message in T pieces between nodes and a ring all-gather inside the node.
#include <gtest/gtest.h>

#include "sim/link_model.hpp"
#include "sim/placed_link.hpp"

namespace gpipe::sim {
namespace {

using schedules::Rank;

// Ranks 0 and 1 on node 0, rank 2 on node 1. Inside: 1 us + 100 GB/s
// (100 bytes a ns); between: 5 us + 10 GB/s (10 bytes a ns).
PlacedLink two_nodes(int pieces) {
  return PlacedLink({0, 0, 1}, UniformLink(1.0, 100.0), UniformLink(5.0, 10.0), pieces);
}

TEST(PlacedLink, InsideANodeTheNodesLinkBetweenNodesTheNetwork) {
  const PlacedLink link = two_nodes(1);
  EXPECT_EQ(link.transfer_ns(Rank{0}, Rank{1}, 800'000), 1'000 + 8'000);
  EXPECT_EQ(link.transfer_ns(Rank{1}, Rank{2}, 800'000), 5'000 + 80'000);
}

TEST(PlacedLink, ScatterGatherSendsATthBetweenNodesThenGathersInside) {
  const PlacedLink link = two_nodes(8);
  // 800,000 bytes in 8 pieces of 100,000: 5 us + 10 us between nodes, then
  // 7 ring steps of 1 us + 1 us inside the receiving node.
  EXPECT_EQ(link.transfer_ns(Rank{1}, Rank{2}, 800'000), 15'000 + 7 * 2'000);
  // Inside a node nothing changes.
  EXPECT_EQ(link.transfer_ns(Rank{0}, Rank{1}, 800'000), 9'000);
  // A message that does not split evenly: pieces of ceil(bytes / T).
  EXPECT_EQ(link.transfer_ns(Rank{1}, Rank{2}, 801), two_nodes(1).transfer_ns(Rank{1}, Rank{2}, 101) +
                                                         7 * two_nodes(1).transfer_ns(Rank{0}, Rank{1}, 101));
}

}  // namespace
}  // namespace gpipe::sim
