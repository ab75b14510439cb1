// The pipeline's flags, as gpipe-sim run and gpipe-run train share them: the
// plan request they make, and the one error for neither K and M nor a file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/error_of.hpp"
#include "tools/common/pipeline_flags.hpp"

namespace gpipe::tools {
namespace {

using gpipe::testing::error_of;

plan::PlanRequest request_of(std::vector<std::string> args) {
  CLI::App app{"test"};
  PipelineFlags flags;
  flags.add_shape(app, 100);
  flags.add_batch(app, 1 << 20, /*with_micro_batch_size=*/true);
  flags.add_schedule(app, {"gpipe", "1f1b", "interleaved-1f1b"}, "Schedule");
  app.add_option("--recompute", flags.recompute);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return flags.request(app);
}

TEST(PipelineFlags, MakeTheRequestTheyName) {
  const plan::PlanRequest r = request_of(
      {"-K", "4", "-V", "2", "-M", "8", "-N", "32", "--schedule", "interleaved-1f1b", "--recompute", "always"});
  EXPECT_EQ(r.schedule, "interleaved-1f1b");
  EXPECT_EQ(r.stages, 4);
  EXPECT_EQ(r.stages_per_rank, 2);
  EXPECT_EQ(r.microbatches, 8);
  EXPECT_EQ(r.batch, 32);
  EXPECT_EQ(r.micro_batch_size, 0);
  EXPECT_EQ(r.recompute, schedules::RecomputePolicy::always);
  EXPECT_EQ(r.given, nullptr);
}

TEST(PipelineFlags, TakeAMicroBatchSizeInsteadOfTheBatch) {
  const plan::PlanRequest r = request_of({"-K", "2", "-M", "3", "-b", "5"});
  EXPECT_EQ(r.batch, 0);
  EXPECT_EQ(r.micro_batch_size, 5);
  EXPECT_EQ(r.schedule, "gpipe");
}

TEST(PipelineFlags, WithoutKAndMOrAFileSayWhatToGive) {
  EXPECT_EQ(error_of([] {
              (void)request_of({"-K", "2", "-N", "4"});
            }),
            "give --stages K and --microbatches M, or --schedule-file FILE");
  EXPECT_EQ(error_of([] {
              (void)request_of({"-M", "2", "-N", "4"});
            }),
            "give --stages K and --microbatches M, or --schedule-file FILE");
}

TEST(PipelineFlags, WriteBackTheFlagsTheyWereMadeOf) {
  PipelineFlags f;
  f.schedule = "1f1b";
  f.stages = 4;
  f.microbatches = 8;
  f.batch = 16;
  f.recompute = "except_last";
  EXPECT_EQ(f.args(), (std::vector<std::string>{"--schedule", "1f1b", "--stages", "4", "--microbatches", "8", "--batch",
                                                "16", "--recompute", "except_last"}));
  f.schedule_file = "s.json";
  f.micro_batch_size = 2;
  f.batch = 0;
  EXPECT_EQ(f.args(), (std::vector<std::string>{"--schedule-file", "s.json", "--micro-batch-size", "2", "--recompute",
                                                "except_last"}));
}

}  // namespace
}  // namespace gpipe::tools
