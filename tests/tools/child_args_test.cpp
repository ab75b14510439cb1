// The command lines gpipe-run validate launches are made from the flags of the
// commands they start: each command's flags, written back by args() and
// parsed by that command's own definitions, give the values they were made
// of, so that a renamed or re-ranged flag cannot leave validate's children
// behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/files.hpp"
#include "tools/gpipe-run/infer_flags.hpp"
#include "tools/gpipe-run/profile_flags.hpp"
#include "tools/gpipe-run/train_flags.hpp"

namespace gpipe::tools {
namespace {

// Parses `args` (the subcommand's name first) with `flags`' own add_to.
template <class Flags>
void parse_as_command(Flags& flags, const std::vector<std::string>& args) {
  CLI::App app{"gpipe-run"};
  CLI::App* cmd = app.add_subcommand(args.front());
  flags.add_to(*cmd);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes a vector last word first
  app.parse(reversed);
}

TEST(ChildArgs, TrainFlagsOfAGeneratedScheduleReadBackAsWritten) {
  TrainFlags written;
  written.run.model = "mlp:layers=4,hidden=16";
  written.run.backward_order = "forward";
  written.run.partition = "3,1";
  written.run.seed = 7;
  written.run.optimizer = "momentum";
  written.run.learning_rate = 0.25F;
  written.run.watchdog_seconds = 12.5;
  written.pipeline.schedule = "interleaved-1f1b";
  written.pipeline.stages = 2;
  written.pipeline.stages_per_rank = 2;
  written.pipeline.microbatches = 4;
  written.pipeline.batch = 8;
  written.pipeline.recompute = "always";
  written.cpu.threads_per_rank = 3;
  written.steps = 6;
  written.measure_steps = 2;
  written.data_parallel = 2;
  written.zero = 1;
  written.tensor_parallel = 2;
  written.trace = "t.json";
  written.json = true;
  written.check_finite = true;
  written.inject_fault = "1:1F0";
  const std::vector<std::string> args = written.args();
  ASSERT_EQ(args.front(), "train");
  TrainFlags read;
  parse_as_command(read, args);
  EXPECT_EQ(read.run.model, written.run.model);
  EXPECT_EQ(read.run.backward_order, "forward");
  EXPECT_EQ(read.run.partition, "3,1");
  EXPECT_EQ(read.run.seed, 7U);
  EXPECT_EQ(read.run.optimizer, "momentum");
  EXPECT_EQ(read.run.learning_rate, 0.25F);
  EXPECT_EQ(read.run.watchdog_seconds, 12.5);
  EXPECT_EQ(read.pipeline.schedule, "interleaved-1f1b");
  EXPECT_EQ(read.pipeline.stages, 2);
  EXPECT_EQ(read.pipeline.stages_per_rank, 2);
  EXPECT_EQ(read.pipeline.microbatches, 4);
  EXPECT_EQ(read.pipeline.batch, 8);
  EXPECT_EQ(read.pipeline.recompute, "always");
  EXPECT_EQ(read.cpu.threads_per_rank, 3);
  EXPECT_EQ(read.steps, 6);
  EXPECT_EQ(read.measure_steps, 2);
  EXPECT_EQ(read.data_parallel, 2);
  EXPECT_EQ(read.zero, 1);
  EXPECT_EQ(read.tensor_parallel, 2);
  EXPECT_EQ(read.trace, "t.json");
  EXPECT_TRUE(read.json);
  EXPECT_TRUE(read.check_finite);
  EXPECT_EQ(read.inject_fault, "1:1F0");
}

// A schedule file replaces the generator's flags and --backward-order, which
// train refuses beside it (tools/common/schedule_file.hpp).
TEST(ChildArgs, TrainFlagsOfAScheduleFileLeaveOutWhatTheFileGives) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "child_args_test_schedule.json";
  write_text_file(file, "{}");  // train's flag checks only that it exists
  TrainFlags written;
  written.run.model = "mlp:layers=2,hidden=8";
  written.pipeline.schedule_file = file.string();
  written.pipeline.batch = 4;
  written.steps = 2;
  const std::vector<std::string> args = written.args();
  for (const char* replaced : {"--schedule", "--stages", "--microbatches", "--stages-per-rank", "--backward-order"}) {
    EXPECT_EQ(std::ranges::count(args, std::string(replaced)), 0) << replaced;
  }
  TrainFlags read;
  parse_as_command(read, args);
  EXPECT_EQ(read.pipeline.schedule_file, file.string());
  EXPECT_EQ(read.pipeline.batch, 4);
  EXPECT_EQ(read.steps, 2);
  std::filesystem::remove(file);
}

TEST(ChildArgs, ProfileFlagsReadBackAsWritten) {
  ProfileFlags written;
  written.model = "transformer:layers=2,hidden=32,heads=2,seq=8";
  written.micro_batch_sizes = "1,2,4";
  written.out = "p.json";
  written.warmup = 1;
  written.repeats = 9;
  written.seed = 3;
  written.optimizer = "sgd";
  written.tensor_parallel = 2;
  written.stages = 4;
  written.workload = "inference";
  written.link_fit = "ping-pong";
  written.cpu.threads_per_rank = 2;
  ProfileFlags read;
  parse_as_command(read, written.args());
  EXPECT_EQ(read.backend, "cpu");
  EXPECT_EQ(read.model, written.model);
  EXPECT_EQ(read.micro_batch_sizes, "1,2,4");
  EXPECT_EQ(read.out, "p.json");
  EXPECT_EQ(read.warmup, 1);
  EXPECT_EQ(read.repeats, 9);
  EXPECT_EQ(read.seed, 3U);
  EXPECT_EQ(read.optimizer, "sgd");
  EXPECT_EQ(read.tensor_parallel, 2);
  EXPECT_EQ(read.stages, 4);
  EXPECT_EQ(read.workload, "inference");
  EXPECT_EQ(read.link_fit, "ping-pong");
  EXPECT_EQ(read.cpu.threads_per_rank, 2);
}

TEST(ChildArgs, InferFlagsReadBackAsWritten) {
  for (const bool poisson : {false, true}) {
    InferFlags written;
    written.model = "dit:layers=2,hidden=32,heads=2,tokens=16";
    written.stages = 2;
    written.micro_batch_size = 3;
    written.requests = 40;
    written.in_flight = 5;
    if (poisson) {
      written.arrival_rate = 1234.5;
      written.arrival_seed = 9;
    } else {
      written.arrival_interval_us = 250.25;
    }
    written.partition = "1,1";
    written.seed = 4;
    written.warmup = 0;
    written.cpu.threads_per_rank = 1;
    written.json = true;
    InferFlags read;
    parse_as_command(read, written.args());
    EXPECT_EQ(read.model, written.model);
    EXPECT_EQ(read.stages, 2);
    EXPECT_EQ(read.micro_batch_size, 3);
    EXPECT_EQ(read.requests, 40);
    EXPECT_EQ(read.in_flight, 5);
    EXPECT_EQ(read.arrival_interval_us, written.arrival_interval_us);
    EXPECT_EQ(read.arrival_rate, written.arrival_rate);
    EXPECT_EQ(read.arrival_seed, written.arrival_seed);
    EXPECT_EQ(read.partition, "1,1");
    EXPECT_EQ(read.seed, 4U);
    EXPECT_EQ(read.warmup, 0);
    EXPECT_EQ(read.cpu.threads_per_rank, 1);
    EXPECT_TRUE(read.json);
  }
}

}  // namespace
}  // namespace gpipe::tools
