// The CPU executor trains schedules with a split backward (I/W) and schedules
// with two stages per rank (looped BFS, stage s on rank s mod K; V-shaped,
// rank r holding stages r and 2K-1-r), built by hand (hand_schedules.hpp):
// - transparency: the loss of every step and the final weights equal those
//   of the same training on one stage with one micro-batch, within 1e-5
//   relative (AdamW's weights 1e-3: transparency_support.hpp);
// - memory: each rank's measured peak activation bytes EQUAL the simulator's
//   prediction for the same schedule, partition and micro-batches, from the
//   analytic profile of the same model in fp32, whose weight_grad_stash_bytes
//   say what W keeps; and every rank ends the step at 0 bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plan/microbatches.hpp"
#include "profiles/analytic.hpp"
#include "profiles/device.hpp"
#include "sim/engine.hpp"
#include "sim/profile_costs.hpp"
#include "tests/exec/hand_schedules.hpp"
#include "tests/exec/trainer_support.hpp"
#include "tests/exec/transparency_support.hpp"

namespace gpipe::exec {
namespace {

using hand_schedules::WeightPlacement;
using schedules::RecomputePolicy;
using trainer_test::kMlp;
using trainer_test::kTransformer;
using trainer_test::RunConfig;

constexpr WeightPlacement kPlacements[] = {WeightPlacement::right_after_input,
                                           WeightPlacement::after_next_action,
                                           WeightPlacement::at_the_end};

std::string placement_name(WeightPlacement where) {
  switch (where) {
    case WeightPlacement::right_after_input:
      return "W right after I";
    case WeightPlacement::after_next_action:
      return "W after the next action";
    case WeightPlacement::at_the_end:
      return "W at the end";
  }
  return "?";
}

// Options for `schedule` (its stages cut uniformly from the model's layers)
// on `config`'s model, batch, optimizer and seed.
TrainOptions options_with(const RunConfig& config, schedules::Schedule schedule) {
  RunConfig c = config;
  c.stages = schedule.num_stages;
  c.microbatches = schedule.num_microbatches;
  TrainOptions o = trainer_test::options_for(c);
  o.schedule = std::move(schedule);
  return o;
}

schedules::Schedule generated(const std::string& name, int stages, int microbatches,
                              RecomputePolicy recompute) {
  schedules::ScheduleOptions s;
  s.num_ranks = stages;
  s.num_microbatches = microbatches;
  s.recompute = recompute;
  return schedules::generate(name, s);
}

std::size_t count_kind(const timelines::Timeline& timeline, schedules::ActionKind kind) {
  return static_cast<std::size_t>(std::count_if(timeline.actions.begin(), timeline.actions.end(),
                                                [&](const auto& t) { return t.action.kind == kind; }));
}

// The analytic profile of the run's model in fp32 at its micro-batch sizes;
// `with_weight_stash` false drops weight_grad_stash_bytes (W then keeps all).
profiles::Profile analytic_for(const TrainOptions& o, bool with_weight_stash = true) {
  const std::vector<int> split = plan::split_batch(o.batch, o.schedule.num_microbatches);
  const std::set<int> distinct(split.begin(), split.end());
  profiles::Profile profile =
      profiles::analytic_profile(o.model, profiles::device_named("h100"), models::DType::fp32,
                                 std::vector<int>(distinct.begin(), distinct.end()));
  if (!with_weight_stash) {
    for (auto& layer : profile.layers) {
      for (auto& sample : layer.samples) sample.weight_grad_stash_bytes.reset();
    }
  }
  return profile;
}

// The simulator's peak activation bytes per rank for the run of `o`.
std::vector<std::int64_t> predicted_peaks_of_profile(const TrainOptions& o, const profiles::Profile& profile) {
  const sim::ProfileCosts costs(profile, o.partition.layers_per_stage,
                                plan::split_batch(o.batch, o.schedule.num_microbatches));
  const sim::UniformLink link(profile.link.latency_us, profile.link.bandwidth_GBps);
  const sim::SimResult result = sim::simulate(o.schedule, costs, link);
  std::vector<std::int64_t> peaks;
  for (const auto& rank : result.metrics.ranks) peaks.push_back(rank.peak_activation_bytes);
  return peaks;
}

std::vector<std::int64_t> measured_peaks(const TrainResult& run) {
  std::vector<std::int64_t> peaks;
  for (const auto& rank : run.metrics.ranks) peaks.push_back(rank.peak_activation_bytes);
  return peaks;
}

void expect_every_rank_ends_at_zero(const TrainResult& run, int ranks, const std::string& what) {
  for (int r = 0; r < ranks; ++r) {
    std::int64_t last = -1;
    for (const auto& sample : run.timeline.memory) {
      if (sample.rank.value == r) last = sample.activation_bytes;
    }
    EXPECT_EQ(last, 0) << what << " rank " << r;
  }
}

// Trains `o`, checks it against `ref` and its memory against the prediction.
void expect_transparent_and_predicted(const TrainOptions& o, const TrainResult& ref,
                                      const OptimizerConfig& optimizer, const std::string& what) {
  const TrainResult run = cpu::train(o);
  trainer_test::expect_matches(run, ref, o.model, optimizer, what);
  const std::vector<std::int64_t> measured = measured_peaks(run);
  EXPECT_EQ(measured, predicted_peaks_of_profile(o, analytic_for(o))) << what;
  for (std::size_t r = 0; r < measured.size(); ++r) EXPECT_GT(measured[r], 0) << what << " rank " << r;
  expect_every_rank_ends_at_zero(run, o.schedule.num_ranks, what);
}

void expect_split_transparent(const RunConfig& base, int stages, int microbatches) {
  const TrainResult ref = trainer_test::one_stage_reference(base);
  for (const std::string name : {"gpipe", "1f1b"}) {
    for (RecomputePolicy recompute :
         {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last}) {
      for (WeightPlacement where : kPlacements) {
        const TrainOptions o = options_with(
            base, hand_schedules::split_backward(generated(name, stages, microbatches, recompute), where));
        const std::string what = fmt::format("{} {} K={} M={} N={} recompute={}, {}", base.model, name,
                                             stages, microbatches, base.batch,
                                             schedules::to_string(recompute), placement_name(where));
        expect_transparent_and_predicted(o, ref, base.optimizer, what);
      }
    }
  }
}

TEST(TrainerSplitBackward, MlpIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = kMlp;
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_split_transparent(c, 4, 3);
}

TEST(TrainerSplitBackward, TransformerIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = kTransformer;
  c.batch = 5;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_split_transparent(c, 3, 5);
}

// The run really splits: the timeline holds the I's and W's, and the W's of
// the rank's first stage each come after an I.
TEST(TrainerSplitBackward, TheTimelineHoldsEveryIAndW) {
  RunConfig c;
  c.batch = 6;
  const TrainOptions o = options_with(
      c, hand_schedules::split_backward(generated("1f1b", 2, 3, RecomputePolicy::never),
                                        WeightPlacement::at_the_end));
  const TrainResult run = cpu::train(o);
  EXPECT_EQ(count_kind(run.timeline, schedules::ActionKind::I), 6U);
  EXPECT_EQ(count_kind(run.timeline, schedules::ActionKind::W), 6U);
  EXPECT_EQ(count_kind(run.timeline, schedules::ActionKind::B), 0U);
}

// What W keeps matters to the peak: with every W deferred to the end, a
// 1F1B rank holds what W keeps of every micro-batch, which is less than the
// whole stash a profile without weight_grad_stash_bytes assumes; the
// measurement follows the former exactly.
TEST(TrainerSplitBackward, DeferredWeightGradientsKeepOnlyWhatWNeeds) {
  for (const char* model : {kMlp, kTransformer}) {
    RunConfig c;
    c.model = model;
    c.batch = 6;
    const TrainOptions o = options_with(
        c, hand_schedules::split_backward(generated("1f1b", 3, 6, RecomputePolicy::never),
                                          WeightPlacement::at_the_end));
    const std::vector<std::int64_t> measured = measured_peaks(cpu::train(o));
    const std::vector<std::int64_t> predicted = predicted_peaks_of_profile(o, analytic_for(o));
    EXPECT_EQ(measured, predicted) << model;
    const std::vector<std::int64_t> keeping_all = predicted_peaks_of_profile(o, analytic_for(o, false));
    ASSERT_EQ(keeping_all.size(), measured.size());
    ASSERT_EQ(predicted.size(), measured.size());
    for (std::size_t r = 0; r < measured.size(); ++r) {
      EXPECT_LT(measured[r], keeping_all[r]) << model << " rank " << r;
      std::printf("%s rank %zu: measured peak %lld B, predicted %lld B (%lld B if W kept everything)\n",
                  model, r, static_cast<long long>(measured[r]), static_cast<long long>(predicted[r]),
                  static_cast<long long>(keeping_all[r]));
    }
  }
}

void expect_two_stages_per_rank_transparent(const RunConfig& base, int ranks, int microbatches) {
  const TrainResult ref = trainer_test::one_stage_reference(base);
  const std::vector<schedules::Schedule> orders = {hand_schedules::looped_bfs(ranks, microbatches),
                                                   hand_schedules::v_shape(ranks, microbatches)};
  for (const schedules::Schedule& order : orders) {
    for (RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage}) {
      schedules::Schedule full = order;
      full.recompute = recompute;
      const std::string what = fmt::format("{} {} K={} M={} N={} recompute={}", base.model, order.name,
                                           ranks, microbatches, base.batch,
                                           schedules::to_string(recompute));
      expect_transparent_and_predicted(options_with(base, full), ref, base.optimizer, what);
      for (WeightPlacement where : kPlacements) {
        expect_transparent_and_predicted(options_with(base, hand_schedules::split_backward(full, where)),
                                         ref, base.optimizer, what + ", " + placement_name(where));
      }
    }
  }
}

TEST(TrainerTwoStagesPerRank, MlpIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = "mlp:layers=5,hidden=16";  // 6 layers: one per stage at K = 3
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_two_stages_per_rank_transparent(c, 2, 3);
  expect_two_stages_per_rank_transparent(c, 3, 4);
}

TEST(TrainerTwoStagesPerRank, TransformerIsTransparentAndItsMemoryIsPredicted) {
  RunConfig c;
  c.model = kTransformer;
  c.batch = 5;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_two_stages_per_rank_transparent(c, 2, 3);
  expect_two_stages_per_rank_transparent(c, 3, 2);
}

// V-shaped: the loss stage (2K-1) lives on rank 0, which reports, reads the
// targets and the inputs (stage 0), and holds both stages' parameters.
TEST(TrainerTwoStagesPerRank, TheVShapesLossStageIsOnRankZero) {
  RunConfig c;
  c.batch = 4;
  const TrainOptions o = options_with(c, hand_schedules::v_shape(2, 2));
  ASSERT_EQ(o.schedule.rank_of(schedules::Stage{3}), schedules::Rank{0});
  const TrainResult run = cpu::train(o);
  EXPECT_TRUE(run.reporter);
  ASSERT_EQ(run.losses.size(), static_cast<std::size_t>(c.steps));
  // mlp:layers=4 (5 layers) cut 2,1,1,1: rank 0 holds blocks 0 and 1 and the
  // loss, rank 1 blocks 2 and 3. Each rank's static bytes are its two
  // stages', together the whole model's.
  const TrainResult whole = trainer_test::one_stage_reference(c);
  ASSERT_EQ(run.metrics.ranks.size(), 2U);
  EXPECT_EQ(run.metrics.ranks[0].static_bytes, run.metrics.ranks[1].static_bytes);
  EXPECT_EQ(run.metrics.ranks[0].static_bytes + run.metrics.ranks[1].static_bytes,
            whole.metrics.ranks.at(0).static_bytes);
}

}  // namespace
}  // namespace gpipe::exec
