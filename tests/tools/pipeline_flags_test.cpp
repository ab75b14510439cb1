// The pipeline's flags, as gpipe-sim run and gpipe-run train share them: the
// plan request they make, and the one error for neither K and M nor a file.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/error_of.hpp"
#include "tools/common/pipeline_flags.hpp"

namespace gpipe::tools {
namespace {

using gpipe::testing::error_of;

// The request of `args`, parsed by a command with the shape, batch and
// schedule flags and --recompute alone, or `with_recompute_flags` all three
// of add_recompute().
plan::PlanRequest request_of(std::vector<std::string> args, bool with_recompute_flags = false) {
  CLI::App app{"test"};
  PipelineFlags flags;
  flags.add_shape(app, 100);
  flags.add_batch(app, 1 << 20, /*with_micro_batch_size=*/true);
  if (with_recompute_flags) {
    flags.add_recompute(app);
  } else {
    flags.add_schedule(app, {"gpipe", "1f1b", "interleaved-1f1b"}, "Schedule");
    app.add_option("--recompute", flags.recompute);
  }
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
  EXPECT_EQ(r.recompute, schedules::RecomputePolicy::stage);
  EXPECT_EQ(r.given, nullptr);
}

TEST(PipelineFlags, TakeAMicroBatchSizeInsteadOfTheBatch) {
  const plan::PlanRequest r = request_of({"-K", "2", "-M", "3", "-b", "5"});
  EXPECT_EQ(r.batch, 0);
  EXPECT_EQ(r.micro_batch_size, 5);
  EXPECT_EQ(r.schedule, "gpipe");
}

plan::PlanRequest request_with_recompute(std::vector<std::string> args) {
  return request_of(std::move(args), /*with_recompute_flags=*/true);
}

TEST(PipelineFlags, FullRecomputeTakesItsMethodAndLayers) {
  const plan::PlanRequest r = request_with_recompute(
      {"-K", "2", "-M", "4", "-N", "8", "--recompute", "full", "--recompute-method", "block", "--recompute-num-layers", "3"});
  EXPECT_EQ(r.recompute, schedules::RecomputePolicy::full);
  EXPECT_EQ(r.checkpointing, (models::Checkpointing{models::CheckpointMethod::block, 3}));
  // The default: Megatron's, one block a checkpoint.
  EXPECT_EQ(request_with_recompute({"-K", "2", "-M", "4", "-N", "8", "--recompute", "full"}).checkpointing,
            (models::Checkpointing{models::CheckpointMethod::uniform, 1}));
  EXPECT_EQ(error_of([] { (void)request_with_recompute({"-K", "2", "-M", "4", "-N", "8", "--recompute-num-layers", "2"}); }),
            "--recompute-method and --recompute-num-layers shape --recompute full's checkpoints: give --recompute full "
            "with them");
  PipelineFlags f;
  f.stages = 2;
  f.microbatches = 4;
  f.recompute = "full";
  f.recompute_num_layers = 2;
  EXPECT_EQ(f.args(), (std::vector<std::string>{"--schedule", "gpipe", "--stages", "2", "--microbatches", "4",
                                                "--recompute", "full", "--recompute-method", "uniform",
                                                "--recompute-num-layers", "2"}));
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
