// The compute order an executor that makes its own transfers runs: a torch
// file with comms, housekeeping and overlapped pairs keeps F, B, I, W in the
// file's order, and its pairs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interop/torch_csv.hpp"
#include "schedules/action.hpp"
#include "schedules/compute_order.hpp"

namespace gpipe::schedules {
namespace {

TEST(ComputeOrder, KeepsTheComputeActionsInTheFilesOrderAndThePairs) {
  const Schedule file = interop::schedule_from_csv(
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0I1,0W1,0REDUCE_GRAD\n"
      "1RECV_F0,1RECV_F1,(1F0;1B0)OVERLAP_F_B,1SEND_B0,1F1,1B1,1SEND_B1,1WAIT_SEND_B0,1WAIT_SEND_B1\n",
      "t.csv", "t");
  const Schedule order = compute_order(file);
  ASSERT_EQ(order.ranks.size(), 2u);
  std::vector<std::string> rank0, rank1;
  for (const Action& a : order.ranks[0]) rank0.push_back(to_string(a));
  for (const Action& a : order.ranks[1]) rank1.push_back(to_string(a));
  EXPECT_EQ(rank0, (std::vector<std::string>{"0F0", "0F1", "0B0", "0I1", "0W1"}));
  EXPECT_EQ(rank1, (std::vector<std::string>{"1F0", "1B0", "1F1", "1B1"}));
  EXPECT_EQ(order.overlapped, file.overlapped);
  EXPECT_FALSE(order.is_lowered());
  EXPECT_EQ(order.num_stages, 2);
  EXPECT_EQ(order.num_microbatches, 2);
}

}  // namespace
}  // namespace gpipe::schedules
