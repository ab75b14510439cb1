// Validation of what torch's files hold: receives posted early are no
// deadlock, STEP is optional, housekeeping may repeat; and the real errors are
// still found: a send wait with no send before it, a reduction wait with no
// reduction, a deadlock through a send wait, an overlapped pair apart.
// Lowering keeps an overlapped pair side by side; torch_comms_dialect writes
// the waits torch's runtime wants.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/files.hpp"
#include "interop/schedule_file.hpp"
#include "interop/torch_csv.hpp"
#include "interop/torch_dialect.hpp"
#include "schedules/generate.hpp"
#include "schedules/grid_printer.hpp"
#include "schedules/lower.hpp"
#include "schedules/overlap.hpp"
#include "schedules/validate.hpp"
#include "tests/error_of.hpp"
#include "tests/schedules/test_support.hpp"

namespace gpipe::interop {
namespace {

using Kind = schedules::ScheduleError::Kind;
using gpipe::testing::error_of;
using schedules::testing::program;

const std::string kTorchCsvDir = std::string(GPIPE_TEST_DATA_DIR) + "/torch_csv/";

schedules::Schedule csv(const std::string& text) { return schedule_from_csv(text, "t.csv", "t"); }

std::string first_error(const schedules::Schedule& s) {
  const auto errors = find_errors(s);
  return errors.empty() ? "valid" : std::string(to_string(errors.front().kind)) + ": " + errors.front().message;
}

void move_before(std::vector<schedules::Action>& list, const char* what, const char* where) {
  const schedules::Action a = schedules::parse_action(what);
  std::erase(list, a);
  list.insert(std::find(list.begin(), list.end(), schedules::parse_action(where)), a);
}

TEST(TorchValidate, AReceivePostedEarlyIsNoDeadlock) {
  // 1F1B, K = 2, M = 2, with rank 0's second receive posted first of all, as
  // torch's files post them. Were a receive to block its rank, 0F0 would wait
  // for 1B1, which waits for 0F0: a cycle that does not exist.
  schedules::Schedule s = lower(schedules::generate_1f1b({.num_ranks = 2, .num_microbatches = 2}));
  move_before(s.ranks[0], "0RECV_B1", "0F0");
  EXPECT_EQ(program(s, 0), "0RECV_B1 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0B1 0STEP");
  EXPECT_EQ(first_error(s), "valid");
}

TEST(TorchValidate, AConsumerBeforeItsReceiveIsStillADeadlock) {
  schedules::Schedule s = lower(schedules::generate_1f1b({.num_ranks = 2, .num_microbatches = 2}));
  move_before(s.ranks[0], "0RECV_B0", "0RECV_B1");
  move_before(s.ranks[0], "0B0", "0RECV_B0");  // 0B0 now before the receive it consumes
  EXPECT_EQ(first_error(s), "cycle: deadlock: 0B0 (rank 0 step 4) -> 0RECV_B0 (rank 0 step 5) -> 0B0");
}

TEST(TorchValidate, SendWaitWithNoSendBeforeIt) {
  schedules::Schedule s = read_schedule_file(kTorchCsvDir + "1f1b_k4_m8_comms.csv");
  move_before(s.ranks[0], "0WAIT_SEND_F0", "0SEND_F0");
  EXPECT_EQ(first_error(s), "unmatched_comm: rank 0 step 2: 0WAIT_SEND_F0 has no 0SEND_F0 before it on rank 0");
  s = csv("0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0,1WAIT_SEND_B0\n");
  EXPECT_EQ(first_error(s), "duplicate: rank 1 step 5: 1WAIT_SEND_B0 duplicates 1WAIT_SEND_B0 at rank 1 step 4");
  s = csv("0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_F0\n");
  EXPECT_EQ(first_error(s),
            "bad_action: rank 1 step 4: 1WAIT_SEND_F0 cannot exist: the last stage has no next stage to exchange with");
}

TEST(TorchValidate, ADeadlockThroughASendWait) {
  // Rank 0 waits for its send of 0F0 to complete before it computes 0F1, but
  // rank 1 posts the receive of it only after 1F1, which needs 0F1.
  const schedules::Schedule s = csv(
      "0F0,0SEND_F0,0WAIT_SEND_F0,0F1,0SEND_F1,0RECV_B1,0B1,0RECV_B0,0B0,0WAIT_SEND_F1\n"
      "1RECV_F1,1F1,1RECV_F0,1F0,1B1,1SEND_B1,1B0,1SEND_B0,1WAIT_SEND_B1,1WAIT_SEND_B0\n");
  EXPECT_EQ(first_error(s),
            "cycle: deadlock: 0WAIT_SEND_F0 (rank 0 step 2) -> 0F1 (rank 0 step 3) -> 0SEND_F1 (rank 0 step 4) "
            "-> 1RECV_F1 (rank 1 step 0) -> 1F1 (rank 1 step 1) -> 1RECV_F0 (rank 1 step 2) -> 0WAIT_SEND_F0");
}

TEST(TorchValidate, TheGridDrawsTorchsFilesWithoutGettingStuck) {
  // Receives posted early do not hold their rank up in the grid either; only work is drawn.
  for (const char* name : {"1f1b_k4_m8_comms.csv", "dualpipev_k2_m4_comms.csv", "interleaved_zb_k2_m4_v2_comms.csv"}) {
    const std::string grid = format_grid(read_schedule_file(kTorchCsvDir + name));
    EXPECT_EQ(grid.find("stuck"), std::string::npos) << name << "\n" << grid;
    EXPECT_EQ(grid.find("RECV"), std::string::npos) << name;
    EXPECT_EQ(grid.find("UNSHARD"), std::string::npos) << name;
  }
  const std::string grid = format_grid(read_schedule_file(kTorchCsvDir + "1f1b_k4_m8_comms.csv"));
  EXPECT_NE(grid.find("\n   3  0F3     1F2     2F1     3F0\n"), std::string::npos) << grid;
}

TEST(TorchValidate, HousekeepingMayRepeatAndStepIsOptional) {
  EXPECT_EQ(first_error(csv("0UNSHARD,0F0,0RESHARD,0UNSHARD,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n")),
            "valid");
  // Lowered without STEP, as torch's files are.
  EXPECT_EQ(first_error(csv("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n")), "valid");
  EXPECT_EQ(first_error(csv("0F0,0B0,0WAIT_REDUCE_GRAD,0REDUCE_GRAD\n")),
            "unmatched_comm: rank 0 step 2: 0WAIT_REDUCE_GRAD has no 0REDUCE_GRAD before it on rank 0");
}

TEST(TorchValidate, OverlappedPairsStandSideBySide) {
  schedules::Schedule s = csv("0F0,1F0,(0F1;1B0)OVERLAP_F_B,1F1,1B1,0B0,0B1\n");
  EXPECT_EQ(first_error(s), "valid");
  std::swap(s.ranks[0][3], s.ranks[0][4]);  // 0F1 1F1 1B0
  EXPECT_EQ(first_error(s),
            "bad_action: rank 0 step 2: the overlapped pair (0F1;1B0)OVERLAP_F_B does not stand side by side on "
            "one rank (1B0 is at rank 0 step 4)");
  s = csv("0F0,1F0,(0F1;1B0)OVERLAP_F_B,1F1,1B1,0B0,0B1\n");
  s.overlapped.push_back({schedules::parse_action("0F1"), schedules::parse_action("1B1")});
  EXPECT_EQ(first_error(s),
            "duplicate: rank 0 step 2: 0F1 is in two overlapped pairs, (0F1;1B0)OVERLAP_F_B and "
            "(0F1;1B1)OVERLAP_F_B");
}

TEST(TorchValidate, LoweringKeepsAnOverlappedPairSideBySide) {
  const schedules::Schedule s = lower(read_schedule_file(kTorchCsvDir + "dualpipev_k2_m4.csv"));
  EXPECT_EQ(first_error(s), "valid");
  const schedules::OverlapIndex pairs(s);
  int found = 0;
  for (const auto& list : s.ranks) {
    for (std::size_t i = 0; i < list.size(); ++i) found += pairs.pair_at(list, i);
  }
  EXPECT_EQ(found, 6);
  // What the pair needs comes before both, what it sends after both.
  const std::string rank0 = program(s, 0);
  EXPECT_NE(rank0.find("0F3 3B1 0SEND_F3 3SEND_B1"), std::string::npos) << rank0;
  EXPECT_NE(rank0.find("3RECV_F2 0RECV_B0 3F2 0B0"), std::string::npos) << rank0;
  EXPECT_EQ(to_csv(s).find("0F3,3B1"), std::string::npos);  // written as one composite
}

TEST(TorchDialect, SendWaitsWhereTorchPutsThemAndNoStep) {
  const schedules::Schedule s = torch_comms_dialect(lower(schedules::generate_1f1b({.num_ranks = 2, .num_microbatches = 2})));
  EXPECT_EQ(program(s, 0), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0WAIT_SEND_F0 0RECV_B1 0B1 0WAIT_SEND_F1");
  EXPECT_EQ(program(s, 1),
            "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1WAIT_SEND_B0 1WAIT_SEND_B1");
  EXPECT_EQ(first_error(s), "valid");
  const schedules::Schedule compute_only = schedules::generate_1f1b({.num_ranks = 2, .num_microbatches = 2});
  EXPECT_EQ(torch_comms_dialect(compute_only), compute_only);
  EXPECT_EQ(error_of([] {
              (void)torch_comms_dialect(lower(schedules::generate_gpipe({.num_ranks = 2,
                                                              .num_microbatches = 2,
                                                              .recompute = schedules::RecomputePolicy::stage})));
            }),
            "0R1: torch's schedule CSV has no recompute action; write the lowered schedule with --recompute never");
}

}  // namespace
}  // namespace gpipe::interop
