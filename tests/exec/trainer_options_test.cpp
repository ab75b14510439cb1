// What train() refuses before any thread starts, each with one line naming
// the flag or action at fault.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/error_of.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using gpipe::testing::error_of;
using schedules::parse_action;
using trainer_test::RunConfig;

TrainOptions base() {
  RunConfig c;  // mlp:layers=4 (5 layers)
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  c.steps = 1;
  return trainer_test::options_for(c);
}

TEST(TrainerOptions, ThePartitionMustFitTheScheduleAndTheModel) {
  TrainOptions o = base();
  o.partition = models::Partition{{2, 2, 1}};
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }),
            "--partition 2,2,1 has 3 stages but the schedule has 2");
  o.partition = models::Partition{{2, 2}};
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }),
            "--partition 2,2 covers 4 layers but model mlp:layers=4,hidden=16 has 5");
  o.partition = models::Partition{{5, 0}};
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }),
            "--partition 5,0: every stage needs at least one layer");
}

TEST(TrainerOptions, MoreMicroBatchesThanSamplesIsRefused) {
  TrainOptions o = base();
  o.batch = 1;
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }),
            "--microbatches 2 exceeds --batch 1: every micro-batch needs a sample");
}

TEST(TrainerOptions, AnInvalidScheduleIsRefusedWithTheValidatorsMessage) {
  TrainOptions o = base();
  o.schedule.ranks[1].pop_back();  // drop rank 1's last backward
  const std::string message = error_of([&] { (void)cpu::train(o); });
  EXPECT_NE(message.find("1B0"), std::string::npos) << message;
}

// The CPU backend runs I/W (trainer_split_backward_test.cpp); a backend
// whose layers do not split their backward (CUDA, so far) is refused by name.
TEST(TrainerOptions, ASplitBackwardIsRefusedForABackendThatDoesNotRunIt) {
  TrainOptions o = base();
  o.schedule.ranks[1][2].kind = schedules::ActionKind::I;
  EXPECT_EQ(error_of([&] { check_train_options(o, "cuda", false); }),
            "schedule gpipe: the cuda executor runs F/B schedules; 1I1 (a split backward, I/W) is "
            "not supported");
  EXPECT_EQ(error_of([&] { check_train_options(o, "cpu", true); }), "no error");
  static_assert(runs_split_backward<cpu::CpuBackend>());
}

TEST(TrainerOptions, AFaultMustNameAnActionOfTheRun) {
  TrainOptions o = base();
  o.fault = FaultInjection{schedules::Rank{2}, parse_action("2F0")};
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }),
            "--inject-fault 2:2F0: there is no rank 2 (the schedule has 2)");
  o.fault = FaultInjection{schedules::Rank{1}, parse_action("0F0")};
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }), "--inject-fault 1:0F0: rank 1 runs no action 0F0");
  // Lowered actions count: rank 1 receives 1RECV_F0, so the run starts and fails there.
  o.fault = FaultInjection{schedules::Rank{1}, parse_action("1RECV_F0")};
  EXPECT_THROW((void)cpu::train(o), RunError);
}

TEST(TrainerOptions, StepsAndTheWatchdogMustBePositive) {
  TrainOptions o = base();
  o.steps = 0;
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }), "--steps must be at least 1, got 0");
  o = base();
  o.measured_steps = 2;
  EXPECT_EQ(error_of([&] { (void)cpu::train(o); }), "measured steps must be in [1, steps = 1], got 2");
  o = base();
  o.watchdog_seconds = 0;
  EXPECT_NE(error_of([&] { (void)cpu::train(o); }), "no error");
}

}  // namespace
}  // namespace gpipe::exec
