// The measured timeline of the CPU executor: each rank ran exactly its
// lowered program, in order; the compute stream never overlaps; the info
// block names the source, the device, the batch and the static memory
// actually held.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/device_name.hpp"
#include "models/optimizer.hpp"
#include "schedules/lower.hpp"
#include "tests/exec/trainer_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::RecomputePolicy;
using trainer_test::RunConfig;

void expect_program_order(const RunConfig& c) {
  const TrainOptions options = trainer_test::options_for(c);
  const TrainResult run = cpu::train(options);
  const schedules::Schedule lowered = schedules::lower(options.schedule);
  for (int r = 0; r < lowered.num_ranks; ++r) {
    std::vector<std::string> measured;
    for (const auto& a : timelines::actions_of(run.timeline, schedules::Rank{r})) {
      EXPECT_EQ(a.stream, timelines::stream_of(a.action.kind)) << to_string(a.action);
      EXPECT_LE(a.start_ns, a.end_ns) << to_string(a.action);
      measured.push_back(to_string(a.action));
    }
    std::vector<std::string> expected;
    for (const auto& a : lowered.actions(schedules::Rank{r})) expected.push_back(to_string(a));
    EXPECT_EQ(measured, expected) << c.schedule << " rank " << r;
  }
  EXPECT_NO_THROW(timelines::check_no_overlap(run.timeline, "cpu run"));
}

TEST(TrainerTrace, EachRankRunsItsLoweredProgramInOrder) {
  RunConfig c;
  c.stages = 4;
  c.microbatches = 6;
  c.batch = 9;
  c.steps = 2;
  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage_except_last}) {
      c.schedule = schedule;
      c.recompute = recompute;
      expect_program_order(c);
    }
  }
  c.model = "transformer:layers=2,hidden=8,heads=2,seq=4,vocab=16";
  c.schedule = "gpipe";
  c.backward_order = schedules::BackwardOrder::forward;
  c.recompute = RecomputePolicy::stage;
  expect_program_order(c);
}

TEST(TrainerTrace, InfoNamesTheCpuRunAndItsStaticMemory) {
  RunConfig c;
  c.stages = 3;
  c.microbatches = 4;
  c.batch = 8;
  c.steps = 1;
  c.optimizer = trainer_test::adamw(1e-3F);
  const TrainOptions options = trainer_test::options_for(c);
  const TrainResult run = cpu::train(options);
  const timelines::TimelineInfo& info = run.timeline.info;
  EXPECT_EQ(info.source, "cpu");
  EXPECT_EQ(info.device, cpu::device_name());
  EXPECT_FALSE(info.device.empty());
  EXPECT_EQ(info.schedule_name, "gpipe");
  EXPECT_EQ(info.num_ranks, 3);
  EXPECT_EQ(info.num_microbatches, 4);
  EXPECT_EQ(info.batch_size, 8);
  // fp32 weights and gradients and AdamW's two state buffers: 16 bytes per parameter.
  ASSERT_EQ(info.static_bytes.size(), 3U);
  for (int s = 0; s < 3; ++s) {
    std::int64_t params = 0;
    for (int l = options.partition.first_layer(s); l < options.partition.end_layer(s); ++l) {
      params += options.model.layers[static_cast<std::size_t>(l)].params;
    }
    EXPECT_EQ(info.static_bytes[static_cast<std::size_t>(s)],
              params * models::static_bytes_per_param(models::Optimizer::adamw, "fp32"))
        << "rank " << s;
    EXPECT_EQ(run.metrics.ranks[static_cast<std::size_t>(s)].static_bytes,
              info.static_bytes[static_cast<std::size_t>(s)]);
  }
  EXPECT_GT(run.metrics.step_time_ns, 0);
  EXPECT_GT(run.metrics.ranks[0].busy_ns, 0);
}

TEST(TrainerTrace, ByDefaultTheTimelineIsTheLastStepAndTheLossesAreEverySteps) {
  RunConfig c;
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  c.steps = 4;
  TrainOptions options = trainer_test::options_for(c);
  std::vector<std::pair<int, double>> reported;
  options.on_step = [&](int step, double loss) { reported.emplace_back(step, loss); };
  const TrainResult run = cpu::train(options);
  ASSERT_EQ(run.losses.size(), 4U);
  ASSERT_EQ(reported.size(), 4U);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(reported[static_cast<std::size_t>(s)].first, s);
    EXPECT_EQ(reported[static_cast<std::size_t>(s)].second,
              run.losses[static_cast<std::size_t>(s)]);
  }
  // One step's actions: every rank's program once.
  EXPECT_EQ(static_cast<int>(run.timeline.actions.size()),
            schedules::lower(options.schedule).total_actions());
  EXPECT_EQ(run.timeline_step, 3);
}

TEST(TrainerTrace, WithSeveralMeasuredStepsTheTimelineIsOneOfThem) {
  RunConfig c;
  c.stages = 2;
  c.microbatches = 2;
  c.batch = 4;
  c.steps = 5;
  TrainOptions options = trainer_test::options_for(c);
  options.measured_steps = 3;
  const TrainResult run = cpu::train(options);
  // The median is one of steps 2, 3, 4 (which, the clock decides), and it
  // holds one step's actions and the memory of a whole step: every rank's
  // activation bytes rise from 0 and come back to 0.
  EXPECT_GE(run.timeline_step, 2);
  EXPECT_LE(run.timeline_step, 4);
  EXPECT_EQ(static_cast<int>(run.timeline.actions.size()),
            schedules::lower(options.schedule).total_actions());
  for (const timelines::RankMetrics& rank : run.metrics.ranks) EXPECT_GT(rank.peak_activation_bytes, 0);
  std::vector<std::int64_t> last(2, -1);
  for (const timelines::MemorySample& m : run.timeline.memory) last[m.rank.at()] = m.activation_bytes;
  EXPECT_EQ(last, (std::vector<std::int64_t>{0, 0}));
}

}  // namespace
}  // namespace gpipe::exec
