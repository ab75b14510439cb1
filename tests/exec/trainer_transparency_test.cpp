// torchgpipe's test_transparency for the CPU executor: pipelining must not
// change the math. For gpipe and 1f1b, every recompute policy, several (K, M)
// (M < K and uneven micro-batches included), both model families and two
// optimizers, the loss of every step and the final weights equal those of
// the same training run on one stage with one micro-batch.
//
// The check and its tolerance (1e-5 relative; AdamW's weights 1e-3) are
// transparency_support.hpp's.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "tests/exec/trainer_support.hpp"
#include "tests/exec/transparency_support.hpp"

namespace gpipe::exec {
namespace {

using schedules::RecomputePolicy;
using trainer_test::expect_matches;
using trainer_test::RunConfig;

struct Shape {
  int stages;
  int microbatches;
  std::int64_t batch;
};

void expect_transparent(const RunConfig& base, const std::vector<Shape>& shapes) {
  const models::Model model = models::parse_model(base.model);
  RunConfig ref_config = base;
  ref_config.schedule = "gpipe";
  ref_config.stages = 1;
  ref_config.microbatches = 1;
  ref_config.recompute = RecomputePolicy::never;
  const TrainResult ref = cpu::train(trainer_test::options_for(ref_config));
  ASSERT_EQ(ref.losses.size(), static_cast<std::size_t>(base.steps));

  for (const std::string schedule : {"gpipe", "1f1b"}) {
    for (RecomputePolicy recompute :
         {RecomputePolicy::never, RecomputePolicy::stage, RecomputePolicy::stage_except_last, RecomputePolicy::full}) {
      for (const Shape& shape : shapes) {
        RunConfig c = base;
        c.schedule = schedule;
        c.recompute = recompute;
        c.stages = shape.stages;
        c.microbatches = shape.microbatches;
        c.batch = shape.batch;
        ASSERT_EQ(c.batch, ref_config.batch) << "the reference trains on the same mini-batches";
        const std::string what =
            fmt::format("{} {} K={} M={} N={} recompute={}", c.model, schedule, c.stages,
                        c.microbatches, c.batch, schedules::to_string(recompute));
        expect_matches(cpu::train(trainer_test::options_for(c)), ref, model, c.optimizer, what);
      }
    }
  }
}

// mlp:layers=4 has 5 layers (4 blocks and the loss), so K <= 5.
const std::vector<Shape> kMlpShapes = {{2, 3, 7}, {4, 2, 7}, {5, 4, 7}};
// transformer:layers=4 has 6 layers (embedding, 4 blocks, head).
const std::vector<Shape> kTransformerShapes = {{2, 3, 5}, {4, 2, 5}, {3, 5, 5}};

TEST(TrainerTransparency, MlpMomentum) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_transparent(c, kMlpShapes);
}

TEST(TrainerTransparency, MlpAdamw) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_transparent(c, kMlpShapes);
}

TEST(TrainerTransparency, TransformerMomentum) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
  c.batch = 5;
  c.optimizer = trainer_test::momentum(0.05F);
  expect_transparent(c, kTransformerShapes);
}

TEST(TrainerTransparency, TransformerAdamw) {
  RunConfig c;
  c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32";
  c.batch = 5;
  c.optimizer = trainer_test::adamw(1e-3F);
  expect_transparent(c, kTransformerShapes);
}

// Dropout's masks are drawn per sample from its row in the mini-batch
// (exec/cpu/ops/dropout.hpp), so every split, schedule and recompute drops
// the same elements as the one-stage run, and R and Megatron's rebuild draw
// them again.
TEST(TrainerTransparency, TransformerDropout) {
  for (const std::string attention : {"naive", "flash"}) {
    RunConfig c;
    c.model = "transformer:layers=4,hidden=16,heads=2,seq=8,vocab=32,dropout=0.25,attn=" + attention;
    c.batch = 5;
    c.optimizer = trainer_test::momentum(0.05F);
    expect_transparent(c, kTransformerShapes);
  }
}

// Two stages on each of two ranks: activations and gradients between stages
// of one rank are handed over locally, not through the link.
TEST(TrainerTransparency, TwoStagesPerRank) {
  RunConfig c;
  c.model = "mlp:layers=4,hidden=16";
  c.batch = 7;
  c.optimizer = trainer_test::momentum(0.05F);
  RunConfig ref_config = c;
  const TrainResult ref = cpu::train(trainer_test::options_for(ref_config));

  for (RecomputePolicy recompute : {RecomputePolicy::never, RecomputePolicy::stage}) {
    c.stages = 4;
    c.microbatches = 3;
    TrainOptions o = trainer_test::options_for(c);
    schedules::Schedule& s = o.schedule;
    s.name = "gpipe-two-stages-per-rank";
    s.num_ranks = 2;
    s.stage_to_rank = {schedules::Rank{0}, schedules::Rank{0}, schedules::Rank{1},
                       schedules::Rank{1}};
    s.recompute = recompute;
    s.ranks.assign(2, {});
    for (int r = 0; r < 2; ++r) {
      auto& list = s.ranks[static_cast<std::size_t>(r)];
      for (int m = 0; m < 3; ++m) {
        for (int st : {2 * r, 2 * r + 1})
          list.push_back(schedules::make_action(st, schedules::ActionKind::F, m));
      }
      for (int m = 2; m >= 0; --m) {
        for (int st : {2 * r + 1, 2 * r})
          list.push_back(schedules::make_action(st, schedules::ActionKind::B, m));
      }
    }
    const TrainResult run = cpu::train(o);
    expect_matches(
        run, ref, o.model, c.optimizer,
        fmt::format("two stages per rank, recompute={}", schedules::to_string(recompute)));
    EXPECT_EQ(run.metrics.ranks.size(), 2U);
  }
}

}  // namespace
}  // namespace gpipe::exec
