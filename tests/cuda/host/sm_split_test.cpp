// The arithmetic of SM partitions (plan_sm_split): even splits rounded down
// to the driver's granularity, --sm-per-stage rounded up, and the one-line
// errors when K partitions do not fit. Hopper's granularity (8 SMs, multiples
// of 8) is from the CUDA driver API's green-context documentation.
#include <gtest/gtest.h>

#include "exec/cuda/base/green_context.hpp"
#include "tests/error_of.hpp"

namespace gpipe::exec::cuda {
namespace {

using testing::error_of;

constexpr int kH100Sms = 132;  // H100 SXM

TEST(SmSplit, EvenSplitRoundsDownToMultiplesOfEight) {
  const SmSplit four = plan_sm_split(kH100Sms, 4, 0);
  EXPECT_EQ(four.stages, 4);
  EXPECT_EQ(four.sms_per_stage, 32);  // 33 rounded down
  EXPECT_EQ(four.unused_sms, 4);
  EXPECT_EQ(four.requested_sms, 0);

  EXPECT_EQ(plan_sm_split(kH100Sms, 1, 0).sms_per_stage, 128);
  EXPECT_EQ(plan_sm_split(kH100Sms, 2, 0).sms_per_stage, 64);
  EXPECT_EQ(plan_sm_split(kH100Sms, 3, 0).sms_per_stage, 40);  // 44 rounded down
  EXPECT_EQ(plan_sm_split(kH100Sms, 3, 0).unused_sms, 12);
  EXPECT_EQ(plan_sm_split(kH100Sms, 8, 0).sms_per_stage, 16);
  EXPECT_EQ(plan_sm_split(kH100Sms, 16, 0).sms_per_stage, 8);
  EXPECT_EQ(plan_sm_split(kH100Sms, 16, 0).unused_sms, 4);
}

TEST(SmSplit, TooManyStagesForAnEvenSplitIsAnInputError) {
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 17, 0); }),
            "--stages 17: 17 SM partitions of at least 8 SMs (multiples of 8) do not fit in the device's 132 SMs; "
            "at most 16 stages get one each");
}

TEST(SmSplit, SmPerStageRoundsUpToTheGranularity) {
  const SmSplit ten = plan_sm_split(kH100Sms, 4, 10);
  EXPECT_EQ(ten.sms_per_stage, 16);
  EXPECT_EQ(ten.requested_sms, 10);
  EXPECT_EQ(ten.unused_sms, 132 - 64);
  EXPECT_EQ(describe(ten, kH100Sms), "4 partitions of 16 SMs (68 of 132 unused), --sm-per-stage 10 rounded up to 16");

  EXPECT_EQ(plan_sm_split(kH100Sms, 4, 32).sms_per_stage, 32);
  EXPECT_EQ(describe(plan_sm_split(kH100Sms, 4, 32), kH100Sms), "4 partitions of 32 SMs (4 of 132 unused)");
  EXPECT_EQ(plan_sm_split(kH100Sms, 2, 1).sms_per_stage, 8);  // below the minimum
  EXPECT_EQ(plan_sm_split(kH100Sms, 3, 33).sms_per_stage, 40);
  EXPECT_EQ(plan_sm_split(kH100Sms, 3, 33).unused_sms, 12);
}

TEST(SmSplit, SmPerStageThatDoesNotFitIsAnInputError) {
  // 33 rounds up to 40, and 4 x 40 SMs exceed the device although 4 x 33 would not.
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 4, 33); }),
            "--sm-per-stage 33: 4 partitions of 40 SMs (at least 8, a multiple of 8) need 160 SMs, the device has 132");
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 17, 8); }),
            "--sm-per-stage 8: 17 partitions of 8 SMs (at least 8, a multiple of 8) need 136 SMs, the device has 132");
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 16, 8); }), "no error");
}

TEST(SmSplit, BadArgumentsAreInputErrors) {
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 0, 0); }), "--stages 0: need at least one stage");
  EXPECT_EQ(error_of([] { (void)plan_sm_split(kH100Sms, 2, -8); }), "--sm-per-stage -8: must not be negative");
}

TEST(SmSplit, OtherGranularities) {
  // Ampere (8.x): at least 4 SMs, multiples of 2. An A100 has 108 SMs.
  const SmGranularity ampere{4, 2};
  EXPECT_EQ(plan_sm_split(108, 4, 0, ampere).sms_per_stage, 26);  // 27 rounded down to even
  EXPECT_EQ(plan_sm_split(108, 4, 3, ampere).sms_per_stage, 4);
  EXPECT_EQ(plan_sm_split(108, 27, 0, ampere).sms_per_stage, 4);
  EXPECT_EQ(error_of([&] { (void)plan_sm_split(108, 28, 0, ampere); }),
            "--stages 28: 28 SM partitions of at least 4 SMs (multiples of 2) do not fit in the device's 108 SMs; "
            "at most 27 stages get one each");
  // A minimum that is not a multiple of the alignment is rounded up to one.
  EXPECT_EQ(plan_sm_split(100, 2, 0, SmGranularity{6, 4}).sms_per_stage, 48);
  EXPECT_EQ(plan_sm_split(100, 2, 1, SmGranularity{6, 4}).sms_per_stage, 8);
  // A driver reporting no granularity (0) is treated as single SMs.
  EXPECT_EQ(plan_sm_split(10, 3, 0, SmGranularity{0, 0}).sms_per_stage, 3);
}

TEST(SmSplit, HopperNeverPlansFinerThanEightSms) {
  // A driver reporting single SMs on compute capability 9.x is not trusted below 8.
  const SmGranularity reported{1, 1};
  const SmGranularity hopper = effective_granularity(reported, 9);
  EXPECT_EQ(hopper.min_partition_sms, 8);
  EXPECT_EQ(hopper.alignment_sms, 8);
  EXPECT_EQ(plan_sm_split(kH100Sms, 3, 0, hopper).sms_per_stage, 40);  // 44 rounded down to a multiple of 8
  // A coarser report stands, and older devices keep what the driver says.
  EXPECT_EQ(effective_granularity(SmGranularity{16, 16}, 10).alignment_sms, 16);
  EXPECT_EQ(effective_granularity(SmGranularity{4, 2}, 8).min_partition_sms, 4);
  EXPECT_EQ(effective_granularity(SmGranularity{4, 2}, 8).alignment_sms, 2);
}

}  // namespace
}  // namespace gpipe::exec::cuda
